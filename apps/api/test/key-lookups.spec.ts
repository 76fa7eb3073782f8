import { ADMIN_TOKEN, type ApiHarness, DAY, inMs, startApi } from './api-harness';

/** Reads by key accept every key a job can have; reads by id refuse parameters they do not know. */
describe('key lookups and query parameters', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let tenantId: number;

  beforeAll(async () => {
    h = await startApi();
    const t = await h.createTenant('lookups');
    tenantId = t.id;
    auth = { Authorization: `Bearer ${t.apiKey}` };
  });
  afterAll(() => h.close());

  it("GET /v1/jobs?key= finds a schedule's occurrence by its schedule:<id>:<instant> key", async () => {
    const s = await h.http().post('/v1/schedules').set(auth).send({ key: 'nightly', kind: 'noop', cron: '0 2 * * *', timezone: 'UTC' }).expect(201);
    const key = `schedule:${s.body.id}:2030-01-01T02:00:00Z`;
    // The row as the promoter materialises it.
    await h.db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, $2, 'noop', now() + interval '2 days', 's')`, [tenantId, key]);
    const found = await h.http().get('/v1/jobs').query({ key }).set(auth).expect(200);
    expect(found.body).toMatchObject({ key, kind: 'noop', state: 'scheduled' });
    await h.http().get('/v1/jobs').query({ key: `schedule:${s.body.id}:2030-01-02T02:00:00Z` }).set(auth).expect(404);
    // Format and length still apply, and name the field.
    for (const [bad, rule] of [['a b', 'charset'], ['x'.repeat(201), 'too_long'], ['', 'empty']]) {
      const res = await h.http().get('/v1/jobs').query({ key: bad }).set(auth).expect(400);
      expect(res.body.details).toEqual([expect.objectContaining({ field: 'key', rule })]);
    }
  });

  it('GET /v1/jobs?key= refuses a parameter it does not know (it used to ignore it): a wait is GET /v1/jobs/:id\'s', async () => {
    await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'k', runAt: inMs(DAY) }).expect(201);
    const res = await h.http().get('/v1/jobs').query({ key: 'k', waitSeconds: 5 }).set(auth).expect(400);
    expect(res.body.details).toEqual([expect.objectContaining({ field: 'waitSeconds', rule: 'unknown_field' })]);
    await h.http().get('/v1/jobs').query({ key: 'k' }).set(auth).expect(200);
  });

  it('a bulk filter takes any prefix of a key, occurrences\' included', async () => {
    const res = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: 'schedule:42:' } }).expect(202);
    expect(res.body.filter).toEqual({ keyPrefix: 'schedule:42:' });
    const bad = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { keyPrefix: 'batch ' } }).expect(400);
    expect(bad.body.details).toEqual([expect.objectContaining({ field: 'filter.keyPrefix' })]);
  });

  it('GET /v1/jobs/:id and GET /v1/schedules/:id/next refuse a parameter they do not know, as the lists do', async () => {
    const job = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'waited', runAt: inMs(DAY) }).expect(201);
    const started = Date.now();
    const res = await h.http().get(`/v1/jobs/${job.body.id}?waitsecond=20`).set(auth).expect(400);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.body.details).toEqual([expect.objectContaining({ field: 'waitsecond', rule: 'unknown_field' })]);
    expect(res.body.details[0].message).toContain('expected waitSeconds');
    await h.http().get(`/v1/jobs/${job.body.id}?waitSeconds=0`).set(auth).expect(200);

    const s = await h.http().post('/v1/schedules').set(auth).send({ key: 'previewed', kind: 'noop', cron: '0 * * * *', timezone: 'UTC' }).expect(201);
    const next = await h.http().get(`/v1/schedules/${s.body.id}/next?cuont=3`).set(auth).expect(400);
    expect(next.body.details).toEqual([expect.objectContaining({ field: 'cuont', rule: 'unknown_field' })]);
    expect((await h.http().get(`/v1/schedules/${s.body.id}/next?count=3`).set(auth).expect(200)).body.items).toHaveLength(3);
  });

  it('GETs that take no query parameter refuse any, naming it (they used to ignore it)', async () => {
    const s = await h.http().post('/v1/schedules').set(auth).send({ key: 'plain', kind: 'noop', cron: '0 * * * *', timezone: 'UTC' }).expect(201);
    const op = await h.http().post('/v1/jobs/bulk-cancel').set(auth).send({ filter: { kind: 'noop' } }).expect(202);
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const routes: [string, { Authorization: string }][] = [
      [`/v1/schedules/${s.body.id}`, auth], [`/v1/operations/${op.body.id}`, auth], ['/v1/kinds', auth],
      [`/v1/admin/tenants/${tenantId}`, admin], [`/v1/admin/tenants/${tenantId}/signing-secrets`, admin],
    ];
    for (const [path, as] of routes) {
      const res = await h.http().get(`${path}?limit=5`).set(as);
      expect({ path, status: res.status, details: res.body.details }).toEqual({ path, status: 400, details: [expect.objectContaining({ field: 'limit', rule: 'unknown_field' })] });
      expect(res.body.details[0].message).toContain('it takes none');
      await h.http().get(path).set(as).expect(200);
    }
  });
});
