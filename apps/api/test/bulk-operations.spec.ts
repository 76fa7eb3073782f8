import { BulkOperationsRepository } from '@almanac/persistence';
import { type ApiHarness, DAY, HOUR, inMs, startApi } from './api-harness';

describe('bulk operations', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let other: { Authorization: string };
  let tenantId: number;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_BULK_MAX_OPEN: '3' });
    const t = await h.createTenant('bulk');
    tenantId = t.id;
    auth = { Authorization: `Bearer ${t.apiKey}` };
    other = { Authorization: `Bearer ${(await h.createTenant('other')).apiKey}` };
  });
  afterAll(() => h.close());
  beforeEach(() => h.db.dataSource.query(`TRUNCATE bulk_operations, bulk_operation_chunks`));

  const create = async (key: string, runAt: string) => (await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key, runAt }).expect(201)).body as { id: string };

  it('accepts a bulk cancel with 202 and an operation whose progress GET /v1/operations/:id shows', async () => {
    const ids = [await create('promo-1', inMs(2 * DAY)), await create('promo-2', inMs(HOUR)), await create('keep-1', inMs(2 * DAY))].map((j) => j.id);
    const res = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: 'promo-' } }).expect(202);
    expect(res.body).toMatchObject({ action: 'cancel', state: 'pending', filter: { keyPrefix: 'promo-' }, matched: null, processed: 0 });

    // What the promoter's bulk sweep does, step by step.
    const repo = new BulkOperationsRepository(h.db.dataSource);
    const op = (await repo.findForTenant(tenantId, res.body.id))!;
    await repo.match(op, 1000);
    expect((await h.http().get(`/v1/operations/${op.id}`).set(auth).expect(200)).body).toMatchObject({ state: 'running', matched: 2, processed: 0 });
    await repo.apply(op, 0, new Date(Date.now() + DAY));
    const done = (await h.http().get(`/v1/operations/${op.id}`).set(auth).expect(200)).body;
    expect(done).toMatchObject({ state: 'done', matched: 2, processed: 2, changed: 2, skipped: 0 });
    expect(done.finishedAt).toEqual(expect.any(String));
    const states = await Promise.all(ids.map(async (id) => (await h.http().get(`/v1/jobs/${id}`).set(auth).expect(200)).body.state));
    expect(states).toEqual(['cancelled', 'cancelled', 'scheduled']);
  });

  it('cancels an open operation (200, again 200); another tenant gets a 404, a done one a 409', async () => {
    const ids = [await create('stop-1', inMs(2 * DAY)), await create('stop-2', inMs(2 * DAY))].map((j) => j.id);
    const { body } = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: 'stop-' } }).expect(202);
    const repo = new BulkOperationsRepository(h.db.dataSource);
    await repo.match((await repo.findForTenant(tenantId, body.id))!, 1000);
    await h.http().post(`/v1/operations/${body.id}/cancel`).set(other).expect(404);
    const cancelled = (await h.http().post(`/v1/operations/${body.id}/cancel`).set(auth).expect(200)).body;
    expect(cancelled).toMatchObject({ id: body.id, state: 'cancelled', matched: 2, processed: 0, finishedAt: expect.any(String) });
    expect((await h.http().post(`/v1/operations/${body.id}/cancel`).set(auth).expect(200)).body).toMatchObject({ state: 'cancelled' });
    expect(await repo.apply((await repo.findForTenant(tenantId, body.id))!, 0, new Date(Date.now() + DAY))).toEqual({ applied: false });
    const states = await Promise.all(ids.map(async (id) => (await h.http().get(`/v1/jobs/${id}`).set(auth).expect(200)).body.state));
    expect(states).toEqual(['scheduled', 'scheduled']);

    const done = (await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: 'none-' } }).expect(202)).body;
    await repo.match((await repo.findForTenant(tenantId, done.id))!, 1000); // matches nothing: done
    const refused = await h.http().post(`/v1/operations/${done.id}/cancel`).set(auth).expect(409);
    expect(refused.body.details).toEqual([expect.objectContaining({ field: 'state', rule: 'not_cancellable' })]);
    await h.http().post('/v1/operations/abc/cancel').set(auth).expect(404);
  });

  it('a resend with the same key answers the operation it made (200), even over the open limit, and makes no second one', async () => {
    const [job] = [await create('shift-1', inMs(2 * DAY))];
    const before = Date.parse((await h.http().get(`/v1/jobs/${job.id}`).set(auth).expect(200)).body.runAt);
    const body = { key: 'shift-dec', filter: { keyPrefix: 'shift-' }, shiftBySeconds: 3600 };
    const first = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send(body).expect(202);
    expect(first.body).toMatchObject({ key: 'shift-dec', state: 'pending' });
    for (let i = 0; i < 2; i++) await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: `x${i}` } }).expect(202);
    const again = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send(body).expect(200); // 3 open: a new one would be a 429
    expect(again.body).toMatchObject({ id: first.body.id, key: 'shift-dec' });

    const repo = new BulkOperationsRepository(h.db.dataSource);
    const op = (await repo.findForTenant(tenantId, first.body.id))!;
    await repo.match(op, 1000);
    await repo.apply(op, 0, new Date(Date.now() + DAY));
    const late = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send(body).expect(200);
    expect(late.body).toMatchObject({ id: first.body.id, state: 'done', changed: 1 });
    expect(Date.parse((await h.http().get(`/v1/jobs/${job.id}`).set(auth).expect(200)).body.runAt)).toBe(before + HOUR); // once, not twice
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM bulk_operations WHERE key = 'shift-dec'`);
    expect(n).toBe(1);
    await h.http().post('/v1/jobs/bulk-reschedule').set(other).send(body).expect(202); // keys are per tenant
  });

  it('another request under a used key is a 409 naming what differs', async () => {
    await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ key: 'k1', filter: { kind: 'noop', runAtFrom: '2026-12-01T00:00:00Z' } }).expect(202);
    // The same instant written another way is the same request.
    await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ key: 'k1', filter: { kind: 'noop', runAtFrom: '2026-12-01T00:00:00.000Z' } }).expect(200);
    const filter = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ key: 'k1', filter: { kind: 'noop' } }).expect(409);
    expect(filter.body.details).toEqual([expect.objectContaining({ field: 'key', rule: 'conflict' })]);
    expect(filter.body.message).toMatch(/different filter$/);
    const action = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ key: 'k1', filter: { kind: 'noop', runAtFrom: '2026-12-01T00:00:00Z' }, shiftBySeconds: 60 }).expect(409);
    expect(action.body.message).toMatch(/different action, shiftBySeconds$/);
  });

  it('a bad key is a 400 naming it, with the other bad fields', async () => {
    const res = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ key: ' padded', filter: { state: 'running' } }).expect(400);
    expect(res.body.details).toEqual([
      expect.objectContaining({ field: 'key', rule: 'whitespace' }),
      expect.objectContaining({ field: 'filter.state', rule: 'enum' }),
    ]);
    const type = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ key: 7, filter: { kind: 'noop' }, shiftBySeconds: 5 }).expect(400);
    expect(type.body.details).toEqual([expect.objectContaining({ field: 'key', rule: 'type' })]);
  });

  it("another tenant's operation, and ids that are not ids, are 404", async () => {
    const { body } = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { kind: 'noop' } }).expect(202);
    await h.http().get(`/v1/operations/${body.id}`).set(other).expect(404);
    await h.http().get('/v1/operations/abc').set(auth).expect(404);
    await h.http().get('/v1/operations/99999999999999999999').set(auth).expect(404);
  });

  it('accepts a reschedule by runAt or by shiftBySeconds, and refuses both or neither', async () => {
    const runAt = inMs(3 * DAY);
    const at = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ filter: { state: 'scheduled' }, runAt }).expect(202);
    expect(at.body).toMatchObject({ action: 'reschedule', runAt: new Date(runAt).toISOString(), filter: { state: 'scheduled' } });
    const by = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ filter: { kind: 'noop' }, shiftBySeconds: -60 }).expect(202);
    expect(by.body).toMatchObject({ shiftBySeconds: -60 });
    const both = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ filter: { kind: 'noop' }, runAt, shiftBySeconds: 5 }).expect(400);
    expect(both.body.details).toEqual([expect.objectContaining({ field: 'runAt', rule: 'one_of' })]);
    await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ filter: { kind: 'noop' } }).expect(400);
    const zero = await h.http().post('/v1/jobs/bulk-reschedule').set(auth).send({ filter: { kind: 'noop' }, shiftBySeconds: 0 }).expect(400);
    expect(zero.body.details).toEqual([expect.objectContaining({ field: 'shiftBySeconds', rule: 'non_zero' })]);
  });

  it.each([
    [{}, 'filter', 'required'],
    [{ filter: {} }, 'filter', 'empty'],
    [{ filter: 'all' }, 'filter', 'type'],
    [{ filter: { state: 'running' } }, 'filter.state', 'enum'],
    [{ filter: { runAtFrom: 'tomorrow' } }, 'filter.runAtFrom', 'format'],
    [{ filter: { runAtFrom: '2026-12-02T00:00:00Z', runAtTo: '2026-12-01T00:00:00Z' } }, 'filter.runAtTo', 'after_from'],
    [{ filter: { kind: 'noop', color: 'red' } }, 'filter.color', 'unknown_field'],
    [{ filter: { kind: 'noop' }, limit: 5 }, 'limit', 'unknown_field'],
  ])('a bad bulk cancel %j is a 400 naming %s', async (body, field, rule) => {
    const res = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send(body).expect(400);
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field, rule })]));
  });

  it('refuses more open operations than ALMANAC_BULK_MAX_OPEN per tenant with 429; other tenants are not held by it', async () => {
    for (let i = 0; i < 3; i++) await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: `x${i}` } }).expect(202);
    const res = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: 'x4' } }).expect(429);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.body.details).toEqual([expect.objectContaining({ field: 'operations', rule: 'too_many_open' })]);
    await h.http().post('/v1/jobs/bulk-cancel').set(other).send({ filter: { keyPrefix: 'x' } }).expect(202);
  });
});
