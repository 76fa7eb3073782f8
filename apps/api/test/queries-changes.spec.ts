import { type ApiHarness, DAY, HOUR, inMs, MINUTE, startApi } from './api-harness';

describe('job queries and changes', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let tenantId: number;

  beforeAll(async () => {
    h = await startApi();
    const t = await h.createTenant();
    tenantId = t.id;
    auth = { Authorization: `Bearer ${t.apiKey}` };
  });
  afterAll(() => h.close());

  const create = async (key: string, runAt: string, kind = 'noop') =>
    (await h.http().post('/v1/jobs').set(auth).send({ kind, key, runAt, payload: kind === 'http' ? { url: `https://example.com/${key}` } : { k: key } }).expect(201)).body as { id: string };
  const hotState = async (id: string) => (await h.hot.getJob(`j-${id}`))?.getState();
  const setState = (id: string, state: string) => h.db.dataSource.query(`UPDATE jobs SET state = $2 WHERE id = $1`, [id, state]);

  it('GET /v1/jobs/:id returns the job with payload and attempts; ?key= finds it; unknown ids are 404', async () => {
    const { id } = await create('q-1', inMs(2 * DAY));
    await h.db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error) VALUES ($1, $2, 1, now(), now(), 'failed', 'boom')`,
      [id, tenantId],
    );
    const res = await h.http().get(`/v1/jobs/${id}`).set(auth).expect(200);
    expect(res.body).toMatchObject({ id, key: 'q-1', payload: { k: 'q-1' }, history: [{ attempt: 1, outcome: 'failed', error: 'boom' }] });
    const byKey = await h.http().get('/v1/jobs').query({ key: 'q-1' }).set(auth).expect(200);
    expect(byKey.body.id).toBe(id);
    await h.http().get('/v1/jobs').query({ key: 'nope' }).set(auth).expect(404);
    await h.http().get('/v1/jobs/123').set(auth).expect(404);
    await h.http().get('/v1/jobs/abc').set(auth).expect(404);
    await h.http().get('/v1/jobs/99999999999999999999999').set(auth).expect(404);
  });

  it("shows a tenant a code and a message meant for it, never an exception's text or the worker's host", async () => {
    const { id } = await create('q-private', inMs(2 * DAY));
    await h.db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error, worker_id)
       VALUES ($1, $2, 1, now(), now(), 'failed', $3, 'worker-node-7.internal-1234'),
              ($1, $2, 2, now(), now(), 'failed', 'HandlerTimeoutError: handler timed out after 50 ms', 'worker-node-7.internal-1234')`,
      [id, tenantId, 'error: duplicate key value violates unique constraint "charges_pkey"'],
    );
    const res = await h.http().get(`/v1/jobs/${id}`).set(auth).expect(200);
    expect(res.body.history).toEqual([
      expect.objectContaining({ attempt: 1, errorCode: 'handler_error' }),
      expect.objectContaining({ attempt: 2, errorCode: 'timeout', error: 'the handler did not finish within 50 ms' }),
    ]);
    const text = JSON.stringify(res.body);
    for (const secret of ['charges_pkey', 'duplicate key', 'worker-node-7', 'HandlerTimeoutError']) expect(text).not.toContain(secret);
  });

  it('lists with filters and an opaque cursor, every job exactly once', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 7; i++) ids.add((await create(`l-${i}`, inMs((i % 2 ? 1 : 40) * DAY + i * MINUTE), i % 3 ? 'noop' : 'http')).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { items: { id: string }[]; nextCursor: string | null } } = await h.http().get('/v1/jobs').query({ limit: 3, ...(cursor ? { cursor } : {}) }).set(auth).expect(200);
      seen.push(...res.body.items.map((j: { id: string }) => j.id));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen.filter((id) => ids.has(id))).toHaveLength(7);
    expect(new Set(seen).size).toBe(seen.length);
    const http = await h.http().get('/v1/jobs').query({ kind: 'http', state: 'scheduled' }).set(auth).expect(200);
    expect(http.body.items.every((j: { kind: string; state: string }) => j.kind === 'http' && j.state === 'scheduled')).toBe(true);
    const bad = await h.http().get('/v1/jobs').query({ state: 'failed', limit: 0, cursor: 'zzz', from: 'yesterday' }).set(auth).expect(400);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['cursor', 'from', 'limit', 'state']);
  });

  it('cancels a queued job (and removes it from the hot queue); 409 once running; idempotent when cancelled', async () => {
    const { id } = await create('c-1', inMs(HOUR));
    expect(await hotState(id)).toBe('delayed');
    const res = await h.http().delete(`/v1/jobs/${id}`).set(auth).expect(200);
    expect(res.body.state).toBe('cancelled');
    expect(await h.hot.getJob(`j-${id}`)).toBeUndefined();
    await h.http().delete(`/v1/jobs/${id}`).set(auth).expect(200);
    const running = await create('c-2', inMs(3 * DAY));
    await setState(running.id, 'r');
    const conflict = await h.http().delete(`/v1/jobs/${running.id}`).set(auth).expect(409);
    expect(conflict.body.details[0]).toMatchObject({ field: 'state', rule: 'not_cancellable' });
    await h.http().patch(`/v1/jobs/${running.id}`).set(auth).send({ runAt: inMs(DAY) }).expect(409);
  });

  it('reschedules with re-tiering: hot → cold leaves Redis, cold → hot enters it', async () => {
    const { id } = await create('r-1', inMs(2 * HOUR));
    expect(await hotState(id)).toBe('delayed');
    const cold = await h.http().patch(`/v1/jobs/${id}`).set(auth).send({ runAt: inMs(30 * DAY) }).expect(200);
    expect(cold.body).toMatchObject({ tier: 'cold', state: 'scheduled' });
    expect(await h.hot.getJob(`j-${id}`)).toBeUndefined();
    const soon = inMs(5 * MINUTE);
    const hot = await h.http().patch(`/v1/jobs/${id}`).set(auth).send({ runAt: soon }).expect(200);
    expect(hot.body).toMatchObject({ tier: 'immediate', state: 'queued', runAt: soon });
    expect((await h.hot.getJob(`j-${id}`))?.data).toMatchObject({ d: Date.parse(soon) });
    const later = inMs(6 * HOUR);
    await h.http().patch(`/v1/jobs/${id}`).set(auth).send({ runAt: later }).expect(200);
    expect((await h.hot.getJob(`j-${id}`))?.data).toMatchObject({ d: Date.parse(later) });
    const bad = await h.http().patch(`/v1/jobs/${id}`).set(auth).send({ runAt: '2026-13-01T00:00:00Z' }).expect(400);
    expect(bad.body.details[0]).toMatchObject({ field: 'runAt' });
  });

  it('retries a dead job by granting more attempts; refuses a live one', async () => {
    const { id } = await create('d-1', inMs(3 * DAY));
    await h.db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = 3, max_attempts = 3, finished_at = now() WHERE id = $1`, [id]);
    const res = await h.http().post(`/v1/jobs/${id}/retry`).set(auth).send({ extraAttempts: 2 }).expect(200);
    expect(res.body).toMatchObject({ state: 'queued', attempts: 3, maxAttempts: 5, tier: 'immediate' });
    expect(await hotState(id)).toBe('waiting');
    const again = await h.http().post(`/v1/jobs/${id}/retry`).set(auth).expect(409);
    expect(again.body.details[0]).toMatchObject({ rule: 'not_dead' });
  });
});
