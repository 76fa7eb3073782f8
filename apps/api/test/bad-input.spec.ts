import { type ApiHarness, DAY, inMs, startApi } from './api-harness';

/** Every client mistake gets a 4xx whose body names the field and rule, and changes nothing. */
describe('bad input', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  const good = () => ({ kind: 'noop', key: 'good-key', runAt: inMs(2 * DAY) });

  beforeAll(async () => {
    h = await startApi({ ALMANAC_MAX_PAYLOAD_BYTES: '65536' });
    auth = { Authorization: `Bearer ${(await h.createTenant()).apiKey}` };
  });
  afterAll(() => h.close());

  async function jobCount(): Promise<number> {
    const r = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs`);
    return r[0].n as number;
  }

  const cases: [string, () => unknown, number, { field: string; rule: string }][] = [
    ['wrong type for kind', () => ({ ...good(), kind: 42 }), 400, { field: 'kind', rule: 'type' }],
    ['missing key', () => ({ kind: 'noop', runAt: inMs(DAY) }), 400, { field: 'key', rule: 'required' }],
    ['missing runAt', () => ({ kind: 'noop', key: 'k' }), 400, { field: 'runAt', rule: 'required' }],
    ['unknown kind', () => ({ ...good(), kind: 'teleport' }), 400, { field: 'kind', rule: 'unknown_kind' }],
    ['kind with capitals', () => ({ ...good(), kind: 'HTTP' }), 400, { field: 'kind', rule: 'charset' }],
    ['key too long', () => ({ ...good(), key: 'k'.repeat(201) }), 400, { field: 'key', rule: 'too_long' }],
    ['key with a space', () => ({ ...good(), key: 'has space' }), 400, { field: 'key', rule: 'charset' }],
    ['key with NUL', () => ({ ...good(), key: 'a\u0000b' }), 400, { field: 'key', rule: 'charset' }],
    ['reserved key prefix', () => ({ ...good(), key: 'schedule:1:2026-01-01T00:00:00Z' }), 400, { field: 'key', rule: 'reserved' }],
    ['runAt without offset', () => ({ ...good(), runAt: '2030-01-01T09:00:00' }), 400, { field: 'runAt', rule: 'missing_zone' }],
    ['runAt unparsable', () => ({ ...good(), runAt: 'tomorrow' }), 400, { field: 'runAt', rule: 'format' }],
    ['runAt not a date', () => ({ ...good(), runAt: '2030-02-30T09:00:00Z' }), 400, { field: 'runAt', rule: 'out_of_range' }],
    ['runAt a number', () => ({ ...good(), runAt: 1893456000000 }), 400, { field: 'runAt', rule: 'type' }],
    ['maxAttempts 0', () => ({ ...good(), maxAttempts: 0 }), 400, { field: 'maxAttempts', rule: 'range' }],
    ['maxAttempts 1.5', () => ({ ...good(), maxAttempts: 1.5 }), 400, { field: 'maxAttempts', rule: 'integer' }],
    ['maxAttempts "3"', () => ({ ...good(), maxAttempts: '3' }), 400, { field: 'maxAttempts', rule: 'integer' }],
    ['payload over 64 KiB', () => ({ ...good(), payload: { blob: 'x'.repeat(65_536) } }), 413, { field: 'payload', rule: 'too_large' }],
    ['payload with NUL', () => ({ ...good(), payload: { s: 'a\u0000' } }), 400, { field: 'payload', rule: 'nul_character' }],
    ['payload with an unpaired surrogate', () => ({ ...good(), payload: { s: 'a\ud800b' } }), 400, { field: 'payload', rule: 'unpaired_surrogate' }],
    ['payload nested 1000 deep', () => ({ ...good(), payload: JSON.parse('['.repeat(1000) + ']'.repeat(1000)) }), 400, { field: 'payload', rule: 'too_deep' }],
    ['unknown field', () => ({ ...good(), max_attempts: 3 }), 400, { field: 'max_attempts', rule: 'unknown_field' }],
    ['array body', () => [good()], 400, { field: 'job', rule: 'type' }],
  ];

  it.each(cases)('POST /v1/jobs: %s', async (_name, body, status, issue) => {
    const before = await jobCount();
    const res = await h.http().post('/v1/jobs').set(auth).send(body() as object).expect(status);
    expect(res.body).toMatchObject({ statusCode: status, error: expect.any(String), message: expect.any(String) });
    expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining(issue)]));
    expect(res.body.message).toContain(issue.field);
    expect(await jobCount()).toBe(before);
  });

  it('malformed JSON → 400 naming the body', async () => {
    const res = await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send('{"kind": "noop",').expect(400);
    expect(res.body.details[0]).toMatchObject({ field: 'body', rule: 'json' });
  });

  it('a body that is not JSON → 415 naming the content type; POST /v1/jobs without a body → 400', async () => {
    const before = await jobCount();
    const res = await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'text/plain').send('kind=noop').expect(415);
    expect(res.body).toMatchObject({ statusCode: 415, error: 'Unsupported Media Type', details: [{ field: 'content-type', rule: 'media_type' }] });
    const empty = await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send('').expect(400);
    expect(empty.body.details[0]).toMatchObject({ field: 'job' }); // no body: "job must be a JSON object"
    expect(await jobCount()).toBe(before);
  });

  it('an empty body with Content-Type: application/json is no body: DELETE and retry still work', async () => {
    const created = await h.http().post('/v1/jobs').set(auth).send({ ...good(), key: 'empty-json-body' }).expect(201);
    const id = created.body.id as string;
    const del = await h.http().delete(`/v1/jobs/${id}`).set(auth).set('Content-Type', 'application/json').send('');
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id, state: 'cancelled' });
  });

  it('a URL Fastify cannot route gets the API error shape, not a 500', async () => {
    const res = await h.http().get('/v1/jobs/%E0%A4%A').set(auth);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request', details: [{ field: 'url', rule: 'fst_err_bad_url' }] });
  });

  it('a __proto__ key in the body → 400, never a polluted object', async () => {
    const body = `{"kind":"noop","key":"proto-1","runAt":"${new Date().toISOString()}","__proto__":{"admin":true}}`;
    const res = await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send(body).expect(400);
    expect(res.body.details[0]).toMatchObject({ field: 'body', rule: 'json' });
  });

  it('a payload number JSON cannot hold → 400 naming its path, and nothing stored', async () => {
    const before = await jobCount();
    const post = (path: string, fields: string, payload: string) =>
      h.http().post(path).set(auth).set('Content-Type', 'application/json').send(`{${fields},"payload":${payload}}`).expect(400);
    const job = `"kind":"noop","key":"number-1","runAt":"${inMs(DAY)}"`;
    // 1e999 parses as Infinity, which JSON.stringify would have stored as null.
    expect((await post('/v1/jobs', job, '{"x":1e999}')).body.details).toEqual([expect.objectContaining({ field: 'payload.x', rule: 'not_finite' })]);
    expect((await post('/v1/jobs', job, '{"a":[1,{"b":-1e999}]}')).body.message).toContain('payload.a[1].b');
    const batch = await h.http().post('/v1/jobs/batch').set(auth).set('Content-Type', 'application/json').send(`{"jobs":[{${job},"payload":{"x":1e999}}]}`);
    expect(batch.status).toBe(200); // per-item results: this item is the error
    expect(batch.body.results[0]).toMatchObject({ status: 'error', error: { details: [{ field: 'payload.x', rule: 'not_finite' }] } });
    const schedule = `"key":"number-s","kind":"noop","cron":"0 * * * *","timezone":"UTC"`;
    expect((await post('/v1/schedules', schedule, '{"x":1e999}')).body.details).toEqual([expect.objectContaining({ field: 'payload.x' })]);
    expect(await jobCount()).toBe(before);
    // Every finite double is kept as the value it parsed to: the largest exact integers, tiny and huge floats.
    const numbers = `{"kind":"noop","key":"number-ok","runAt":"${inMs(DAY)}","payload":{"n":-9007199254740991,"f":1.5e-300,"g":6.02e23}}`;
    const ok = await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send(numbers).expect(201);
    expect((await h.http().get(`/v1/jobs/${ok.body.id}`).set(auth).expect(200)).body.payload).toEqual({ n: -9007199254740991, f: 1.5e-300, g: 6.02e23 });
    // ... and a replay of the same body is the same job, not a conflict.
    await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send(numbers).expect(200);
  });

  it('a JSON string or number body → 400', async () => {
    await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send('"hello"').expect(400);
    await h.http().post('/v1/jobs').set(auth).set('Content-Type', 'application/json').send('42').expect(400);
  });

  it('a body over ALMANAC_MAX_BODY_BYTES → 413', async () => {
    const res = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [{ ...good(), payload: 'x'.repeat(5 * 1024 * 1024) }] }).expect(413);
    expect(res.body.details[0]).toMatchObject({ field: 'body', rule: 'too_large' });
  });

  it('batch over 1000 → 400 and nothing inserted; missing or non-array jobs → 400', async () => {
    const before = await jobCount();
    const jobs = Array.from({ length: 1001 }, (_, i) => ({ ...good(), key: `over-${i}` }));
    const res = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs }).expect(400);
    expect(res.body.details[0]).toMatchObject({ field: 'jobs', rule: 'max_items' });
    expect(await jobCount()).toBe(before);
    const missing = await h.http().post('/v1/jobs/batch').set(auth).send({}).expect(400);
    expect(missing.body.details[0]).toMatchObject({ field: 'jobs', rule: 'required' });
    await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: 'many' }).expect(400);
  });

  it('a rejected replay does not change the accepted job', async () => {
    const created = await h.http().post('/v1/jobs').set(auth).send({ ...good(), key: 'keep-me', payload: { v: 1 } }).expect(201);
    await h.http().post('/v1/jobs').set(auth).send({ ...good(), key: 'keep-me', payload: { v: 2 } }).expect(409);
    await h.http().patch(`/v1/jobs/${created.body.id}`).set(auth).send({ runAt: 'soon' }).expect(400);
    const job = await h.http().get(`/v1/jobs/${created.body.id}`).set(auth).expect(200);
    expect(job.body).toMatchObject({ payload: { v: 1 }, runAt: created.body.runAt, state: 'scheduled' });
  });

  it('admin: missing name → 400; bad token → 401', async () => {
    await h.http().post('/v1/admin/tenants').set('Authorization', 'Bearer wrong').send({ name: 'x' }).expect(401);
    const res = await h.http().post('/v1/admin/tenants').set('Authorization', `Bearer test-admin-token-0123456789`).send({}).expect(400);
    expect(res.body.details[0]).toMatchObject({ field: 'name', rule: 'required' });
  });
});
