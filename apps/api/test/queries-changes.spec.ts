import { type AlmanacClient, ConflictError, createClient, InvalidIdError, NotFoundError, ValidationError } from '@almanac/client';
import { MAX_LIFETIME_ATTEMPTS } from '@almanac/domain';
import { Clock } from '@almanac/platform';
import { type ApiHarness, DAY, HOUR, inMs, MINUTE, startApi } from './api-harness';

// Through @almanac/client, as a producer calls the API; raw HTTP (supertest) only for requests
// the client's types would not let anyone write.
describe('job queries and changes', () => {
  let h: ApiHarness;
  let client: AlmanacClient;
  let auth: { Authorization: string };
  let tenantId: number;

  beforeAll(async () => {
    h = await startApi();
    const t = await h.createTenant();
    tenantId = t.id;
    auth = { Authorization: `Bearer ${t.apiKey}` };
    client = createClient({ baseUrl: h.url, apiKey: t.apiKey });
  });
  afterAll(() => h.close());

  const create = async (key: string, runAt: string, kind: 'noop' | 'http' = 'noop') => {
    const { created, job } = await client.jobs.create(kind === 'http' ? { kind, key, runAt, payload: { url: `https://example.com/${key}` } } : { kind, key, runAt, payload: { k: key } });
    expect(created).toBe(true);
    return job;
  };
  const setState = (id: string, state: string) => h.db.dataSource.query(`UPDATE jobs SET state = $2 WHERE id = $1`, [id, state]);

  it('GET /v1/jobs/:id returns the job with payload and attempts; ?key= finds it; unknown ids are 404', async () => {
    const { id } = await create('q-1', inMs(2 * DAY));
    await h.db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error) VALUES ($1, $2, 1, now(), now(), 'failed', 'boom')`,
      [id, tenantId],
    );
    expect(await client.jobs.get(id)).toMatchObject({ id, key: 'q-1', payload: { k: 'q-1' }, progress: null, history: [{ attempt: 1, outcome: 'failed', error: 'boom' }] });
    const reported = { percent: 40, note: 'rows 400 of 1000', attempt: 1, at: '2026-12-04T12:00:00.000Z' };
    await h.db.dataSource.query(`UPDATE jobs SET progress = $2 WHERE id = $1`, [id, JSON.stringify(reported)]);
    expect((await client.jobs.get(id)).progress).toEqual(reported);
    expect((await client.jobs.findByKey('q-1')).id).toBe(id);
    await expect(client.jobs.findByKey('nope')).rejects.toBeInstanceOf(NotFoundError);
    for (const unknown of ['123', '99999999999999999999999']) await expect(client.jobs.get(unknown)).rejects.toBeInstanceOf(NotFoundError);
    // Not an id the API gives (digits): refused by the client before any request.
    await expect(client.jobs.get('abc')).rejects.toBeInstanceOf(InvalidIdError);
    await h.http().get('/v1/jobs/abc').set(auth).expect(404);
  });

  it("shows a tenant a code and a message meant for it, never an exception's text or the worker's host", async () => {
    const { id } = await create('q-private', inMs(2 * DAY));
    await h.db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error, worker_id)
       VALUES ($1, $2, 1, now(), now(), 'failed', $3, 'worker-node-7.internal-1234'),
              ($1, $2, 2, now(), now(), 'failed', 'HandlerTimeoutError: handler timed out after 50 ms', 'worker-node-7.internal-1234')`,
      [id, tenantId, 'error: duplicate key value violates unique constraint "charges_pkey"'],
    );
    const job = await client.jobs.get(id);
    expect(job.history).toEqual([
      expect.objectContaining({ attempt: 1, errorCode: 'handler_error' }),
      expect.objectContaining({ attempt: 2, errorCode: 'timeout', error: 'the handler did not finish within 50 ms' }),
    ]);
    const text = JSON.stringify(job);
    for (const secret of ['charges_pkey', 'duplicate key', 'worker-node-7', 'HandlerTimeoutError']) expect(text).not.toContain(secret);
  });

  it('lists with filters and an opaque cursor, every job exactly once', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 7; i++) ids.add((await create(`l-${i}`, inMs((i % 2 ? 1 : 40) * DAY + i * MINUTE), i % 3 ? 'noop' : 'http')).id);
    const seen: string[] = [];
    for await (const job of client.jobs.iterate({ limit: 3 })) seen.push(job.id);
    expect(seen.filter((id) => ids.has(id))).toHaveLength(7);
    expect(new Set(seen).size).toBe(seen.length);
    const http = await client.jobs.list({ kind: 'http', state: 'scheduled' });
    expect(http.items.length).toBeGreaterThan(0);
    expect(http.items.every((j) => j.kind === 'http' && j.state === 'scheduled')).toBe(true);
    // Values the client's types refuse: sent raw.
    const bad = await h.http().get('/v1/jobs').query({ state: 'failed', limit: 0, cursor: 'zzz', from: 'yesterday' }).set(auth).expect(400);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['cursor', 'from', 'limit', 'state']);
  });

  it('pages a sparse tenant\'s scheduled jobs to the end: the cursor of a page cut short by the bucket budget is accepted', async () => {
    // Ten jobs ten days apart: a page spends its 168 hours of buckets (MAX_HOURS_READ) in 8 probes and ends with a cursor at the next unread hour.
    const t = await h.createTenant();
    const sparse = createClient({ baseUrl: h.url, apiKey: t.apiKey });
    const keys = Array.from({ length: 10 }, (_, i) => `sparse-${i}`);
    for (const [i, key] of keys.entries()) await sparse.jobs.create({ kind: 'noop', key, runAt: inMs((i + 1) * 10 * DAY), payload: {} });
    for (const filter of [{ state: 'scheduled' as const }, {}]) {
      const seen: string[] = [];
      for await (const job of sparse.jobs.iterate({ ...filter, limit: 50 })) seen.push(job.key);
      expect({ filter, seen }).toEqual({ filter, seen: keys });
    }
  });

  it('cancels a queued job (its hint stays, stale: the claim drops it); 409 once running; idempotent when cancelled', async () => {
    const { id } = await create('c-1', inMs(HOUR));
    expect(await h.hints(id)).toEqual([expect.objectContaining({ state: 'delayed' })]);
    expect((await client.jobs.cancel(id)).state).toBe('cancelled');
    expect((await client.jobs.cancel(id)).state).toBe('cancelled');
    const running = await create('c-2', inMs(3 * DAY));
    await setState(running.id, 'r');
    const conflict = await client.jobs.cancel(running.id).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect((conflict as ConflictError).details[0]).toMatchObject({ field: 'state', rule: 'not_cancellable' });
    await expect(client.jobs.reschedule(running.id, inMs(DAY))).rejects.toBeInstanceOf(ConflictError);
  });

  it('reschedules with re-tiering: a move into the hot horizon gives the row a hint at its new time, one out of it none', async () => {
    const at = inMs(2 * HOUR);
    const { id } = await create('r-1', at);
    expect((await h.hints(id)).map((x) => x.dueMs)).toEqual([Date.parse(at)]);
    expect(await client.jobs.reschedule(id, inMs(30 * DAY))).toMatchObject({ tier: 'cold', state: 'scheduled' });
    expect((await h.hints(id)).map((x) => x.dueMs)).toEqual([Date.parse(at)]); // no new one; the old is stale
    const soon = inMs(5 * MINUTE);
    expect(await client.jobs.reschedule(id, soon)).toMatchObject({ tier: 'immediate', state: 'queued', runAt: soon });
    const later = new Date(Date.now() + 6 * HOUR);
    await client.jobs.reschedule(id, later);
    expect((await h.hints(id)).map((x) => x.dueMs)).toEqual([Date.parse(soon), Date.parse(at), later.getTime()]);
    const bad = await client.jobs.reschedule(id, '2026-13-01T00:00:00Z').catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).details[0]).toMatchObject({ field: 'runAt' });
  });

  it('retries a dead job by granting more attempts; refuses a live one', async () => {
    const { id } = await create('d-1', inMs(3 * DAY));
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = 3, max_attempts = 3, finished_at = now() WHERE id = $1`, [id]);
    expect(await client.jobs.retry(id, { extraAttempts: 2 })).toMatchObject({ state: 'queued', attempts: 3, maxAttempts: 5, tier: 'immediate' });
    expect(await h.hints(id)).toEqual([expect.objectContaining({ state: 'waiting' })]);
    const again = await client.jobs.retry(id).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConflictError);
    expect((again as ConflictError).details[0]).toMatchObject({ rule: 'not_dead' });
  });

  it("retries a dead job at the database's now, not the API host's clock (30 s ahead of it here)", async () => {
    const { id } = await create('d-skew', inMs(3 * DAY));
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = 3, max_attempts = 3, finished_at = now() WHERE id = $1`, [id]);
    const dbNow = async () => (await h.db.dataSource.query<{ t: Date }[]>(`SELECT now() AS t`))[0].t.getTime();
    const ahead = jest.spyOn(h.app.get(Clock), 'now').mockImplementation(() => new Date(Date.now() + 30_000));
    try {
      const before = await dbNow();
      const job = await client.jobs.retry(id);
      const after = await dbNow();
      expect(job).toMatchObject({ state: 'queued', tier: 'immediate' });
      const runAt = Date.parse(job.runAt); // claims compare it with the database's now(): due at once, not in 30 s
      expect(runAt).toBeGreaterThanOrEqual(before);
      expect(runAt).toBeLessThanOrEqual(after);
    } finally {
      ahead.mockRestore();
    }
  });

  it("carries a job's newest 20 attempts and pages the rest, newest first, for its tenant only", async () => {
    const { id } = await create('h-1', inMs(3 * DAY));
    await h.db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome)
       SELECT j.id, j.tenant_id, g, now(), now(), 'failed' FROM jobs j, generate_series(1, 45) g WHERE j.id = $1`,
      [id],
    );
    const job = await client.jobs.get(id);
    expect(job.history.map((a) => a.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => 26 + i));
    expect(job.historyNext).toBe('26');
    const second = await client.jobs.attempts(id, { cursor: job.historyNext! });
    expect(second.items.map((a) => a.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => 25 - i));
    const last = await client.jobs.attempts(id, { cursor: second.nextCursor! });
    expect(last).toMatchObject({ nextCursor: null });
    expect(last.items.map((a) => a.attempt)).toEqual([5, 4, 3, 2, 1]);
    const all: number[] = [];
    for await (const a of client.jobs.eachAttempt(id)) all.push(a.attempt);
    expect(all).toHaveLength(45);
    const bad = await client.jobs.attempts(id, { cursor: '-1' }).catch((e: unknown) => e);
    expect((bad as ValidationError).details[0]).toMatchObject({ field: 'cursor' });
    const other = createClient({ baseUrl: h.url, apiKey: (await h.createTenant('other-h')).apiKey });
    await expect(other.jobs.attempts(id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it(`refuses a retry past ${MAX_LIFETIME_ATTEMPTS} attempts in a job's life, naming the field, and grants one up to it`, async () => {
    const { id } = await create('d-2', inMs(3 * DAY));
    const used = MAX_LIFETIME_ATTEMPTS - 50;
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = $2, max_attempts = $2, finished_at = now() WHERE id = $1`, [id, used]);
    const over = await client.jobs.retry(id, { extraAttempts: 51 }).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(ConflictError);
    expect((over as ConflictError).details[0]).toMatchObject({ field: 'extraAttempts', rule: 'attempt_limit' });
    expect(await client.jobs.get(id)).toMatchObject({ state: 'dead', attempts: used, maxAttempts: used });
    expect(await client.jobs.retry(id, { extraAttempts: 50 })).toMatchObject({ state: 'queued', attempts: used, maxAttempts: MAX_LIFETIME_ATTEMPTS });
  });
});
