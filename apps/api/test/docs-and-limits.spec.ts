import { type ApiHarness, DAY, inMs, startApi } from './api-harness';

describe('OpenAPI docs, rate limit, metrics', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  it('serves the OpenAPI document generated from the controllers, with examples, and the UI at /docs', async () => {
    const doc = await h.http().get('/docs-json').expect(200);
    const paths = Object.keys(doc.body.paths);
    for (const p of ['/v1/jobs', '/v1/jobs/batch', '/v1/jobs/{id}', '/v1/jobs/{id}/retry', '/v1/schedules', '/v1/schedules/{id}/next', '/v1/admin/tenants']) {
      expect(paths).toContain(p);
    }
    expect(doc.body.components.schemas.CreateJobDto.properties.runAt.example).toBe('2026-11-30T09:00:00+01:00');
    expect(doc.body.components.securitySchemes).toHaveProperty('tenant');
    // Bodies are JSON only: the contract says so where a body is taken.
    expect(Object.keys(doc.body.paths['/v1/jobs'].post.responses)).toContain('415');
    expect(Object.keys(doc.body.paths['/v1/schedules/{id}'].patch.responses)).toContain('415');
    expect(Object.keys(doc.body.paths['/v1/jobs'].get.responses)).not.toContain('415');
    const ui = await h.http().get('/docs').expect(200);
    expect(ui.text).toContain('swagger-ui');
  });

  it('shows each registered kind\'s payload schema, and POST /v1/jobs\' body as their union by kind', async () => {
    const doc = await h.http().get('/docs-json').expect(200);
    const charge = doc.body.components.schemas['CreateJob.charge'];
    expect(charge.allOf[0]).toEqual({ $ref: '#/components/schemas/CreateJobDto' });
    expect(charge.allOf[1].properties.kind).toEqual({ type: 'string', enum: ['charge'] });
    expect(charge.allOf[1].properties.payload).toMatchObject({ required: ['invoiceId', 'amountCents'], properties: { amountCents: { type: 'integer' } } });
    expect(doc.body.components.schemas['CreateJob.noop'].allOf[1].properties.payload).not.toHaveProperty('type'); // any payload
    const body = doc.body.paths['/v1/jobs'].post.requestBody.content['application/json'].schema;
    expect(body.discriminator.propertyName).toBe('kind');
    expect(Object.keys(body.discriminator.mapping)).toEqual(['charge', 'http', 'ledger-transfer', 'noop']);
    expect(body.oneOf).toHaveLength(4);
  });

  it('limits a tenant\'s ingest rate: 429 with Retry-After, and the refused request inserts nothing', async () => {
    const { apiKey } = await h.createTenant('slow', 1); // 1 job/s, burst of one full batch
    const auth = { Authorization: `Bearer ${apiKey}` };
    const jobs = Array.from({ length: 1000 }, (_, i) => ({ kind: 'noop', key: `rl-${i}`, runAt: inMs(2 * DAY) }));
    const ok = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs }).expect(200);
    expect(ok.body.created).toBe(1000);
    const refused = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'rl-over', runAt: inMs(2 * DAY) }).expect(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.body.details[0]).toMatchObject({ rule: 'rate_limit' });
    await h.http().get('/v1/jobs').query({ key: 'rl-over' }).set(auth).expect(404);
    // Reads are not rate limited.
    await h.http().get('/v1/jobs').set(auth).expect(200);
  });

  it('counts a tenant\'s ingest on every replica against one rate', async () => {
    const { apiKey } = await h.createTenant('spread', 1);
    const auth = { Authorization: `Bearer ${apiKey}` };
    const other = await h.replica();
    const jobs = Array.from({ length: 1000 }, (_, i) => ({ kind: 'noop', key: `spread-${i}`, runAt: inMs(2 * DAY) }));
    await h.http().post('/v1/jobs/batch').set(auth).send({ jobs }).expect(200); // the whole burst, on this replica
    const refused = await other.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'spread-over', runAt: inMs(2 * DAY) }).expect(429);
    expect(refused.body.details[0]).toMatchObject({ rule: 'rate_limit' });
  });

  it('records request durations by route pattern, also for answers given before a controller runs', async () => {
    await h.http().get('/v1/jobs/1234567890123').expect(401);
    await h.http().get('/v1/no-such-route/42').expect(404);
    const metrics = await h.http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/almanac_http_request_duration_seconds_count\{method="POST",route="\/v1\/jobs\/batch",status="200"\}/);
    expect(metrics.text).toMatch(/almanac_http_request_duration_seconds_count\{method="GET",route="\/v1\/jobs\/:id",status="401"\} 1/);
    expect(metrics.text).toMatch(/almanac_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1/);
    // The raw id never becomes a label.
    expect(metrics.text).not.toContain('1234567890123');
  });
});
