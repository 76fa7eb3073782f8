import { request as httpRequest } from 'node:http';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

/**
 * Sends the headers of a 3 MiB POST and only its first kilobyte, and resolves with the status
 * the server answers while the rest of the body is still unsent.
 */
function statusBeforeBody(url: string, path: string, authorization: string | null): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest({
      hostname, port, path, method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': String(3 * 1024 * 1024), ...(authorization ? { Authorization: authorization } : {}) },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET') reject(err);
    });
    req.write('{"jobs": [' + ' '.repeat(1024));
    setTimeout(() => reject(new Error('no answer before the body: the server waited to read it')), 3000).unref();
  });
}

describe('authentication before the body is read', () => {
  let h: ApiHarness;
  let key: string;

  beforeAll(async () => {
    h = await startApi();
    key = (await h.createTenant()).apiKey;
  });
  afterAll(() => h.close());

  it('refuses a body-bearing request without a valid key before reading the body', async () => {
    expect(await statusBeforeBody(h.url, '/v1/jobs/batch', null)).toBe(401);
    expect(await statusBeforeBody(h.url, '/v1/jobs/batch', 'Bearer alm_not-a-real-key')).toBe(401);
    expect(await statusBeforeBody(h.url, '/%761/jobs/batch', null)).toBe(401); // the router decodes it to /v1
    expect(await statusBeforeBody(h.url, '/v1/admin/tenants', 'Bearer wrong-admin-token')).toBe(401);
  });

  it('refuses a body on a path outside /v1 and /console before reading it: a 404\'s or /health\'s body was read and parsed up to 4 MiB without a key', async () => {
    for (const path of ['/nope', '/health/live', '/metrics', '/docs', '/V1/jobs/batch', '//v1/jobs/batch', '/v2/jobs']) {
      expect([path, await statusBeforeBody(h.url, path, null)]).toEqual([path, 404]);
    }
    const res = await h.http().post('/nope').send({ a: 1 }).expect(404);
    expect(res.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
    await h.http().get('/health/live').expect(200); // no body: served as before
  });

  it('still serves authenticated requests, and the error shape is the API one', async () => {
    await h.http().post('/v1/jobs').set('Authorization', `Bearer ${key}`).send({ kind: 'noop', key: 'early-ok', runAt: new Date(Date.now() + 60_000).toISOString() }).expect(201);
    await h.http().post('/v1/admin/tenants').set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'other' }).expect(201);
    const res = await h.http().post('/v1/jobs').set('Authorization', 'Bearer alm_nope').send({ kind: 'noop', key: 'x' }).expect(401);
    expect(res.body).toMatchObject({ statusCode: 401, error: 'Unauthorized', details: [{ field: 'authorization' }] });
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });
});
