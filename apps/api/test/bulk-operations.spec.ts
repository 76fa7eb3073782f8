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
