import { Agent, request as httpRequest } from 'node:http';
import { DEFAULT_SHARE } from '@almanac/domain';
import { KindsRepository } from '@almanac/persistence';
import { IngestService } from '../src/jobs/ingest.service';
import { ADMIN_TOKEN, type ApiHarness, DAY, HOUR, inMs, MINUTE, startApi } from './api-harness';

describe('ingest (POST /v1/jobs, /v1/jobs/batch)', () => {
  let h: ApiHarness;
  let key: string;
  const auth = () => ({ Authorization: `Bearer ${key}` });

  beforeAll(async () => {
    h = await startApi();
    key = (await h.createTenant()).apiKey;
  });
  afterAll(() => h.close());

  async function row(id: string) {
    const rows = await h.db.dataSource.query(`SELECT state, tenant_id FROM jobs WHERE id = $1`, [id]);
    return rows[0] as { state: string; tenant_id: number } | undefined;
  }

  it('creates a job (201), replays (200 same job), conflicts on a different body (409 naming the key)', async () => {
    const body = { kind: 'noop', key: 'invoice:2026-11', runAt: inMs(2 * DAY), payload: { a: 1, b: [1, 2] } };
    const first = await h.http().post('/v1/jobs').set(auth()).send(body).expect(201);
    expect(first.body).toMatchObject({ kind: 'noop', key: 'invoice:2026-11', tier: 'cold', state: 'scheduled', attempts: 0 });
    expect(await row(first.body.id)).toEqual({ state: 's', tenant_id: expect.any(Number) });
    const again = await h.http().post('/v1/jobs').set(auth()).send({ ...body, payload: { b: [1, 2], a: 1 } }).expect(200);
    expect(again.body.id).toBe(first.body.id);
    for (const change of [{ kind: 'http', payload: { url: 'https://example.com/hook' } }, { runAt: inMs(3 * DAY) }, { payload: { a: 2 } }]) {
      const res = await h.http().post('/v1/jobs').set(auth()).send({ ...body, ...change }).expect(409);
      expect(res.body.message).toContain('invoice:2026-11');
      expect(res.body.details[0]).toMatchObject({ field: 'key', rule: 'conflict' });
    }
  });

  it('routes by tier: immediate and hot rows are queued and in Redis (no payload), cold rows are not', async () => {
    const cases = [
      { key: 't-immediate', runAt: inMs(MINUTE), tier: 'immediate', state: 'queued' },
      { key: 't-hot', runAt: inMs(5 * HOUR), tier: 'hot', state: 'queued' },
      { key: 't-cold', runAt: inMs(3 * DAY), tier: 'cold', state: 'scheduled' },
    ];
    for (const c of cases) {
      const res = await h.http().post('/v1/jobs').set(auth())
        .send({ kind: 'noop', key: c.key, runAt: c.runAt, payload: { secret: 'x' } }).expect(201);
      expect(res.body).toMatchObject({ tier: c.tier, state: c.state });
      if (c.state === 'queued') {
        expect(await h.hints(res.body.id)).toEqual([{ dueMs: Date.parse(c.runAt), state: 'delayed' }]);
      } else {
        expect(await h.hints(res.body.id)).toEqual([]);
      }
    }
    const envelopes = await h.hot.queue.getJobs(['waiting', 'delayed']);
    expect(JSON.stringify(envelopes.map((j) => j.data))).not.toContain('secret'); // references, never a payload
  });

  it('group-commits single POSTs that arrive together: 1000 from a 100-socket client, far fewer commits', async () => {
    const before = await commits();
    const agent = new Agent({ keepAlive: true, maxSockets: 100 });
    const post = (i: number) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ kind: 'noop', key: `gc-${i}`, runAt: inMs(2 * DAY) });
        const req = httpRequest(`${h.url}/v1/jobs`, { method: 'POST', agent, headers: { ...auth(), 'Content-Type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
    const statuses = await Promise.all(Array.from({ length: 1000 }, (_, i) => post(i)));
    agent.destroy();
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    const after = await commits();
    expect(after.count - before.count).toBe(1000);
    // Two commits run at once; everything that arrives meanwhile shares the next one.
    expect(after.commits - before.commits).toBeLessThan(200); // ~75 here
  });

  it('a tenant whose insert fails does not fail the other tenants sharing its group commit', async () => {
    const ok = await h.createTenant('steady');
    const doomed = await h.createTenant('doomed');
    const ds = h.db.dataSource;
    await ds.query(`CREATE FUNCTION fail_doomed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'doomed tenant'; END $$`);
    await ds.query(`CREATE TRIGGER fail_doomed BEFORE INSERT ON jobs FOR EACH ROW WHEN (NEW.tenant_id = ${doomed.id}) EXECUTE FUNCTION fail_doomed()`);
    try {
      const ingest = h.app.get(IngestService);
      const tenant = (id: number) => ({ id, name: 't', createdAt: new Date(), rateLimitPerSecond: null, maxSchedules: null, share: DEFAULT_SHARE, disabled: false, retentionSeconds: null, keysAfterRetention: 'reserved' as const, keyReservationSeconds: null, storage: { maxStoredBytes: null, storedBytes: 0, measuredAt: null } });
      const body = (key: string) => ({ kind: 'noop', key, runAt: inMs(MINUTE) });
      // Submitted in one turn: one group, two tenants.
      const [a, b] = await Promise.allSettled([ingest.createOne(tenant(ok.id), body('steady-1')), ingest.createOne(tenant(doomed.id), body('doomed-1'))]);
      expect(a).toMatchObject({ status: 'fulfilled', value: { created: true } });
      expect(b).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringContaining('doomed tenant') }) });
      const job = (a as PromiseFulfilledResult<{ job: { id: string } }>).value.job;
      expect(await row(job.id)).toMatchObject({ state: 'q' });
      expect(await h.hints(job.id)).toHaveLength(1);
    } finally {
      await ds.query(`DROP TRIGGER fail_doomed ON jobs; DROP FUNCTION fail_doomed()`);
    }
  });

  async function commits(): Promise<{ count: number; commits: number }> {
    const metrics = await h.http().get('/metrics').expect(200);
    const count = Number(/almanac_ingest_commit_rows_sum (\d+)/.exec(metrics.text)?.[1] ?? 0);
    const n = Number(/almanac_ingest_commit_rows_count (\d+)/.exec(metrics.text)?.[1] ?? 0);
    return { count, commits: n };
  }

  it('checks the payload against the kind\'s registered schema at ingest: 400 naming each field, nothing stored', async () => {
    const bad = await h.http().post('/v1/jobs').set(auth())
      .send({ kind: 'charge', key: 'pay-1', runAt: inMs(MINUTE), payload: { invoiceId: '', amountCents: 12.5, note: 'x' } })
      .expect(400);
    const details = bad.body.details as { field: string; rule: string; message: string }[];
    expect(details.map((d) => d.field).sort()).toEqual(['payload.amountCents', 'payload.invoiceId', 'payload.note']);
    expect(details.find((d) => d.field === 'payload.note')).toMatchObject({ rule: 'unknown_field' });
    expect(details.find((d) => d.field === 'payload.amountCents')?.message).toContain('integer');
    const missing = await h.http().post('/v1/jobs').set(auth()).send({ kind: 'charge', key: 'pay-2', runAt: inMs(MINUTE) }).expect(400);
    expect(missing.body.details[0]).toMatchObject({ field: 'payload', rule: 'schema_type' });
    const batch = await h.http().post('/v1/jobs/batch').set(auth()).send({
      jobs: [
        { kind: 'charge', key: 'pay-3', runAt: inMs(MINUTE), payload: { invoiceId: 'inv-3', amountCents: 100 } },
        { kind: 'charge', key: 'pay-4', runAt: inMs(MINUTE), payload: { invoiceId: 'inv-4' } },
      ],
    }).expect(200);
    expect(batch.body.results.map((r: { status: string }) => r.status)).toEqual(['created', 'error']);
    expect(batch.body.results[1].error.details[0]).toMatchObject({ field: 'payload.amountCents', rule: 'required' });
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key LIKE 'pay-%'`);
    expect(n).toBe(1);
  });

  it('accepts a kind a worker registers after the API started, without waiting for the copy to age', async () => {
    const body = { kind: 'invoice.send', key: 'late-kind-1', runAt: inMs(MINUTE), payload: { to: 'a@example.com' } };
    const before = await h.http().post('/v1/jobs').set(auth()).send({ ...body, kind: 'teleport' }).expect(400);
    expect(before.body.details[0]).toMatchObject({ field: 'kind', rule: 'unknown_kind' });
    expect(before.body.details[0].message).toMatch(/known: charge, http, ledger-transfer, noop\)/);
    await new KindsRepository(h.db.dataSource).register(
      [{ kind: 'invoice.send', pool: 'mail', timeoutMs: 5000, payloadSchema: { type: 'object', required: ['to'], properties: { to: { type: 'string', format: 'email' } } } }],
      'worker-late',
    );
    await h.http().post('/v1/jobs').set(auth()).send(body).expect(201);
    const wrong = await h.http().post('/v1/jobs').set(auth()).send({ ...body, key: 'late-kind-2', payload: { to: 'not-an-address' } }).expect(400);
    expect(wrong.body.details[0]).toMatchObject({ field: 'payload.to', rule: 'schema_format' });
    const kinds = await h.http().get('/v1/kinds').set(auth()).expect(200);
    expect(kinds.body.items.map((k: { kind: string }) => k.kind)).toEqual(['charge', 'http', 'invoice.send', 'ledger-transfer', 'noop']);
  });

  it('answers 503 (retry), not 400, while no worker has registered a kind yet', async () => {
    const fresh = await startApi();
    try {
      const { apiKey } = await fresh.createTenant('early');
      await fresh.db.dataSource.query(`DELETE FROM job_kinds`); // a first rollout: the API is up before any worker
      const res = await fresh.http().post('/v1/jobs').set({ Authorization: `Bearer ${apiKey}` }).send({ kind: 'noop', key: 'early-1', runAt: inMs(MINUTE) }).expect(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.message).toContain('no worker has registered its kinds yet');
    } finally {
      await fresh.close();
    }
  });

  it('batch: results in order, created/existing/error per item, bad items do not sink the rest', async () => {
    await h.http().post('/v1/jobs').set(auth()).send({ kind: 'noop', key: 'b-existing', runAt: '2030-01-01T00:00:00Z' }).expect(201);
    const res = await h.http().post('/v1/jobs/batch').set(auth()).send({
      jobs: [
        { kind: 'noop', key: 'b-1', runAt: inMs(MINUTE) },
        { kind: 'nope', key: 'b-2', runAt: inMs(MINUTE) },
        { kind: 'noop', key: 'b-existing', runAt: '2030-01-01T00:00:00Z' },
        { kind: 'noop', key: 'b-existing', runAt: '2031-01-01T00:00:00Z' },
        { kind: 'noop', key: 'b-3', runAt: '2030-01-01T00:00:00' },
        { kind: 'http', key: 'b-4', runAt: '2030-01-01T00:00:00+02:00', maxAttempts: 7, payload: { url: 'https://example.com/hook' } },
      ],
    }).expect(200);
    expect(res.body.results.map((r: { status: string }) => r.status)).toEqual(['created', 'error', 'existing', 'error', 'error', 'created']);
    expect(res.body.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(res.body.results[1].error).toMatchObject({ statusCode: 400, details: [{ field: 'kind', rule: 'unknown_kind' }] });
    expect(res.body.results[3].error).toMatchObject({ statusCode: 409, details: [{ field: 'key', rule: 'conflict' }] });
    expect(res.body.results[4].error.details[0]).toMatchObject({ field: 'runAt', rule: 'missing_zone' });
    expect(res.body.results[5].job).toMatchObject({ maxAttempts: 7, runAt: '2029-12-31T22:00:00.000Z' });
    expect(res.body).toMatchObject({ created: 2, existing: 1, errors: 3 });
  });

  it('another tenant cannot see the job, and may reuse the key', async () => {
    const other = (await h.createTenant('other')).apiKey;
    const mine = await h.http().post('/v1/jobs').set(auth()).send({ kind: 'noop', key: 'shared', runAt: inMs(DAY * 2) }).expect(201);
    await h.http().get(`/v1/jobs/${mine.body.id}`).set('Authorization', `Bearer ${other}`).expect(404);
    await h.http().delete(`/v1/jobs/${mine.body.id}`).set('Authorization', `Bearer ${other}`).expect(404);
    await h.http().patch(`/v1/jobs/${mine.body.id}`).set('Authorization', `Bearer ${other}`).send({ runAt: inMs(DAY) }).expect(404);
    await h.http().post(`/v1/jobs/${mine.body.id}/retry`).set('Authorization', `Bearer ${other}`).send({}).expect(404);
    await h.http().get('/v1/jobs').query({ key: 'shared' }).set('Authorization', `Bearer ${other}`).expect(404);
    const theirs = await h.http().post('/v1/jobs').set('Authorization', `Bearer ${other}`)
      .send({ kind: 'noop', key: 'shared', runAt: inMs(DAY * 3) }).expect(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
    const byKey = await h.http().get('/v1/jobs').query({ key: 'shared' }).set('Authorization', `Bearer ${other}`).expect(200);
    expect(byKey.body.id).toBe(theirs.body.id);
  });

  it('authenticates: no key, bad key, admin token as tenant key → 401', async () => {
    await h.http().post('/v1/jobs').send({}).expect(401);
    await h.http().get('/v1/jobs').set('Authorization', 'Bearer alm_nope').expect(401);
    const res = await h.http().get('/v1/jobs').set('Authorization', `Bearer ${ADMIN_TOKEN}`).expect(401);
    expect(res.body).toMatchObject({ statusCode: 401, details: [{ field: 'authorization' }] });
    await h.http().post('/v1/admin/tenants').set('Authorization', `Bearer ${key}`).send({ name: 'x' }).expect(401);
  });
});
