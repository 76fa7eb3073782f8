import { createHash } from 'node:crypto';
import { ADMIN_TOKEN, type ApiHarness, DAY, inMs, startApi } from './api-harness';

describe('retention through the API: a tenant’s setting, and a replay of a removed job’s key', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  /** What the retention sweep leaves for a removed key (the sweep's own spec covers writing it). */
  const retire = (tenantId: number, key: string, day: string, state: string, through: string | null = null, digest: string | null = null) =>
    h.db.dataSource.query(
      `INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through, result_digest) VALUES ($1, $2, $3, $4, $5, decode($6, 'hex'))`,
      [tenantId, key, day, state, through, digest],
    );
  const hint = ' (send "replay": "result" to be answered what it kept, with 200)';

  it('sets and shows retentionSeconds and keysAfterRetention; refuses bad values naming the field', async () => {
    const { id } = await h.createTenant('keeper');
    const shown = await h.http().get(`/v1/admin/tenants`).set(admin).expect(200);
    expect(shown.body.items.find((t: { id: number }) => t.id === id)).toMatchObject({ retentionSeconds: null, keysAfterRetention: 'reserved', keyReservationSeconds: null });
    const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ retentionSeconds: 90 * 86_400, keysAfterRetention: 'freed' }).expect(200);
    expect(res.body).toMatchObject({ id, retentionSeconds: 90 * 86_400, keysAfterRetention: 'freed', weight: 1 });
    const back = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ retentionSeconds: null }).expect(200);
    expect(back.body).toMatchObject({ retentionSeconds: null, keysAfterRetention: 'freed' });
    for (const [body, field] of [
      [{ retentionSeconds: 60 }, 'retentionSeconds'],
      [{ retentionSeconds: 3600.5 }, 'retentionSeconds'],
      [{ retentionSeconds: '30d' }, 'retentionSeconds'],
      [{ keysAfterRetention: 'forgotten' }, 'keysAfterRetention'],
      [{ keyReservationSeconds: 3600 }, 'keyReservationSeconds'],
      [{ keyReservationSeconds: 'always' }, 'keyReservationSeconds'],
    ] as const) {
      const bad = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send(body).expect(400);
      expect(bad.body.details).toEqual([expect.objectContaining({ field })]);
    }
    const after = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ weight: 1 }).expect(200);
    expect(after.body).toMatchObject({ retentionSeconds: null, keysAfterRetention: 'freed' });
    for (const keyReservationSeconds of [30 * 86_400, 'forever', null]) {
      const set = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ keyReservationSeconds }).expect(200);
      expect(set.body).toMatchObject({ keyReservationSeconds, keysAfterRetention: 'freed' });
    }
  });

  it('answers a replay of a retired key with 409 saying when its job was removed and how it ended, alone or in a batch', async () => {
    const { id, apiKey } = await h.createTenant('replayer');
    const other = await h.createTenant('neighbour');
    await retire(id, 'invoice:2026-10', '2026-11-02', 'd');
    const auth = { Authorization: `Bearer ${apiKey}` };
    const body = { kind: 'noop', key: 'invoice:2026-10', runAt: inMs(DAY) };

    const one = await h.http().post('/v1/jobs').set(auth).send(body).expect(409);
    expect(one.body.message).toBe(`key "invoice:2026-10" named a job that ended succeeded and was removed by retention on 2026-11-02; the key stays reserved for good${hint}`);
    await retire(id, 'invoice:2026-09', '2026-10-02', 'x', '2099-11-06');
    const until = await h.http().post('/v1/jobs').set(auth).send({ ...body, key: 'invoice:2026-09' }).expect(409);
    expect(until.body.message).toContain('ended dead and was removed by retention on 2026-10-02; the key stays reserved through 2099-11-06 (UTC)');
    expect(one.body.details).toEqual([expect.objectContaining({ field: 'key', rule: 'retired' })]);

    const batch = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [{ ...body, key: 'invoice:2026-12' }, body] }).expect(200);
    expect(batch.body).toMatchObject({ created: 1, errors: 1 });
    expect(batch.body.results[1]).toMatchObject({ index: 1, status: 'error', error: { statusCode: 409, details: [expect.objectContaining({ rule: 'retired' })] } });
    // The reservation is the tenant's own: another tenant's key of the same text is new.
    await h.http().post('/v1/jobs').set({ Authorization: `Bearer ${other.apiKey}` }).send(body).expect(201);
  });

  it('with "replay": "result", answers 200 with what the key keeps: how the job ended, when, until when, its result digest', async () => {
    const { id, apiKey } = await h.createTenant('idempotent');
    const auth = { Authorization: `Bearer ${apiKey}` };
    const digest = '0123456789abcdef0123456789abcdef';
    await retire(id, 'charge:42', '2026-11-02', 'd', '2099-12-07', digest);
    const body = { kind: 'noop', key: 'charge:42', runAt: inMs(DAY), replay: 'result' };
    const removed = { removed: true, key: 'charge:42', state: 'succeeded', removedOn: '2026-11-02', reservedThrough: '2099-12-07', resultDigest: digest };

    expect((await h.http().post('/v1/jobs').set(auth).send(body).expect(200)).body).toEqual(removed);
    const batch = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [body, { ...body, key: 'charge:43' }] }).expect(200);
    expect(batch.body).toMatchObject({ created: 1, removed: 1, errors: 0 });
    expect(batch.body.results[0]).toEqual({ index: 0, status: 'removed', removed });
    // Nothing was created for the reserved key; a new key with "replay" is an ordinary create.
    await h.http().get('/v1/jobs').query({ key: 'charge:42' }).set(auth).expect(404);
    expect(batch.body.results[1]).toMatchObject({ status: 'created', job: { key: 'charge:43' } });
    const bad = await h.http().post('/v1/jobs').set(auth).send({ ...body, replay: 'always' }).expect(400);
    expect(bad.body.details).toEqual([expect.objectContaining({ field: 'replay', rule: 'enum' })]);
  });

  it("shows a job's result digest: SHA-256 of the stored result's text, its first 16 bytes, in hex", async () => {
    const { id, apiKey } = await h.createTenant('digests');
    const auth = { Authorization: `Bearer ${apiKey}` };
    const created = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'digest-1', runAt: inMs(DAY) }).expect(201);
    expect((await h.http().get(`/v1/jobs/${created.body.id}`).set(auth).expect(200)).body.resultDigest).toBeNull();
    await h.db.dataSource.query(`UPDATE jobs SET result = '{"charged": true, "amount": 4200}' WHERE id = $1 AND tenant_id = $2`, [created.body.id, id]);
    const [{ text }] = await h.db.dataSource.query<{ text: string }[]>(`SELECT result::text AS text FROM jobs WHERE id = $1`, [created.body.id]);
    const expected = createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
    expect((await h.http().get(`/v1/jobs/${created.body.id}`).set(auth).expect(200)).body.resultDigest).toBe(expected);
  });
});
