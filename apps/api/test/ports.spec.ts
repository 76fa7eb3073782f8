import { connect } from 'node:net';
import { freePorts } from '@almanac/testing/free-port';
import request from 'supertest';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

/**
 * ALMANAC_ADMIN_PORT and ALMANAC_METRICS_PORT over real HTTP against the api role: with them,
 * /v1/admin/* and /metrics are answered only on their own ports and are the 404 of an unknown
 * path on PORT; without them, everything stays on PORT.
 */

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

const admin = (r: request.Test) => r.set('Authorization', `Bearer ${ADMIN_TOKEN}`);

describe('admin and metrics on their own ports', () => {
  let h: ApiHarness;
  let adminUrl: string;
  let metricsUrl: string;
  let adminPort: number;
  let metricsPort: number;

  beforeAll(async () => {
    [adminPort, metricsPort] = await freePorts(2);
    h = await startApi({ ALMANAC_ADMIN_PORT: String(adminPort), ALMANAC_METRICS_PORT: String(metricsPort) });
    adminUrl = `http://127.0.0.1:${adminPort}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
  });
  afterAll(async () => {
    await h?.close();
    // Closing the app closes its extra ports too.
    expect([await refused(adminPort), await refused(metricsPort)]).toEqual([true, true]);
  });

  it('serves the console on both ports; the admin token signs in to it only on the admin port', async () => {
    const created = await admin(request(adminUrl).post('/v1/admin/tenants')).send({ name: 'console-ports' }).expect(201);
    const { apiKey } = created.body as { apiKey: string };
    await h.http().post('/console/sign-in').type('form').send({ token: ADMIN_TOKEN }).expect(401);
    const signedIn = await request(adminUrl).post('/console/sign-in').type('form').send({ token: ADMIN_TOKEN }).expect(303);
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0];
    await request(adminUrl).get('/console/tenants').set('Cookie', cookie).expect(200);
    // Cookies ignore ports: the operator's cookie reaching PORT is no session there.
    const elsewhere = await h.http().get('/console/tenants').set('Cookie', cookie).expect(303);
    expect(elsewhere.headers.location).toBe('/console/sign-in?why=ended');
    expect(elsewhere.headers['set-cookie']).toBeUndefined(); // nor ends the admin port's session
    await h.http().post('/console/sign-in').type('form').send({ token: apiKey }).expect(303);
    await request(adminUrl).post('/console/sign-in').type('form').send({ token: apiKey }).expect(303);
  });

  it('answers admin routes on the admin port, with the admin token as before', async () => {
    await request(adminUrl).post('/v1/admin/tenants').send({ name: 'acme' }).expect(401);
    const created = await admin(request(adminUrl).post('/v1/admin/tenants')).send({ name: 'acme' }).expect(201);
    const { apiKey } = created.body as { apiKey: string };
    const listed = await admin(request(adminUrl).get('/v1/admin/tenants')).expect(200);
    expect(JSON.stringify(listed.body)).toContain('acme');
    // The tenant's key works on the public port.
    await h.http().get('/v1/jobs').set('Authorization', `Bearer ${apiKey}`).expect(200);
  });

  it('answers admin routes on the public port as an unknown path, token or not, body or not', async () => {
    const unknown = await admin(h.http().get('/v1/admin/no-such-thing')).expect(404);
    expect(unknown.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Cannot GET /v1/admin/no-such-thing', details: [] });
    for (const [method, req] of [
      ['GET', admin(h.http().get('/v1/admin/tenants'))],
      ['GET', h.http().get('/v1/admin/tenants')],
      ['POST', admin(h.http().post('/v1/admin/tenants')).send({ name: 'x' })],
      // No token and a body: authentication before the body would have said 401.
      ['POST', h.http().post('/v1/admin/tenants').send({ name: 'x' })],
    ] as const) {
      const res = await req.expect(404);
      expect(res.body).toEqual({ ...(unknown.body as object), message: `Cannot ${method} /v1/admin/tenants` });
      expect(res.headers['content-type']).toBe(unknown.headers['content-type']);
    }
    // The route, not the spelling, decides.
    await admin(h.http().get('/v1/%61dmin/tenants')).expect(404);
    await admin(h.http().get('/v1/admin/tenants/')).expect(404);
  });

  it('answers nothing but admin routes on the admin port', async () => {
    for (const path of ['/v1/jobs', '/health/live', '/health/ready', '/metrics', '/docs', '/docs-json']) {
      await request(adminUrl).get(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`).expect(404);
    }
  });

  it('serves /metrics only on the metrics port', async () => {
    const res = await request(metricsUrl).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.text).toContain('almanac_http_request_duration_seconds');
    await h.http().get('/metrics').expect(404);
    for (const path of ['/health/live', '/v1/jobs', '/v1/admin/tenants']) {
      await request(metricsUrl).get(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`).expect(404);
    }
  });

  it('keeps health and the tenant API on the public port', async () => {
    await h.http().get('/health/live').expect(200);
    await h.http().get('/health/ready').expect(200);
    await h.http().get('/v1/jobs').expect(401);
    const docs = await h.http().get('/docs-json').expect(200);
    expect(Object.keys(docs.body.paths)).toContain('/v1/jobs');
    // Nor does its document tell the admin routes exist (review).
    expect(Object.keys(docs.body.paths).filter((p) => p.startsWith('/v1/admin'))).toEqual([]);
    expect(Object.keys(docs.body.components.schemas)).toContain('JobDto');
    expect(Object.keys(docs.body.components.schemas).filter((n) => /Tenant|SigningSecret|KindLimit/.test(n))).toEqual([]);
    expect(Object.keys(docs.body.components.securitySchemes)).toEqual(['tenant']);
    expect(JSON.stringify(docs.body)).not.toMatch(/admin token|ADMIN_TOKEN/);
  });
});

describe('without ALMANAC_ADMIN_PORT and ALMANAC_METRICS_PORT', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h?.close());

  it('serves admin routes, /metrics and health on the one port', async () => {
    await admin(h.http().post('/v1/admin/tenants')).send({ name: 'acme' }).expect(201);
    await admin(h.http().get('/v1/admin/tenants')).expect(200);
    const metrics = await h.http().get('/metrics').expect(200);
    expect(metrics.text).toContain('almanac_http_request_duration_seconds');
    await h.http().get('/health/ready').expect(200);
  });
});
