import { request as httpRequest } from 'node:http';
import { type ApiHarness, clockHeld, DAY, inMs, startApi } from './api-harness';

/** The status answered to a POST of `length` bytes of which only the first kilobyte is ever sent. */
function statusBeforeBody(url: string, path: string, authorization: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise<number>((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(3 * 1024 * 1024), Authorization: authorization } });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) => void (err.code === 'ECONNRESET' || reject(err)));
    req.write('{"key": ' + ' '.repeat(1024));
    setTimeout(() => reject(new Error('no answer before the body: the server waited to read it')), 3000).unref();
  });
}

/** Bodies the parser refuses spend the tenant's budget, and an empty budget refuses them unread. */
describe('malformed and oversize bodies against the rate limits', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '5', ALMANAC_MAX_BODY_BYTES: '65536' });
  });
  afterAll(() => h.close());

  const broken = (auth: string, path = '/v1/schedules') =>
    h.http().post(path).set('Authorization', auth).set('Content-Type', 'application/json').send('{"key": "k", "kind": "noop",');

  it('a request budget of 5 reads 5 broken bodies; the 6th is a 429, and one sent later is refused before its body', async () => {
    const auth = `Bearer ${(await h.createTenant('breaker')).apiKey}`;
    await clockHeld(h, async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await broken(auth)).status);
      expect(statuses).toEqual([400, 400, 400, 400, 400, 429]);
      const refused = await broken(auth).expect(429);
      expect(refused.body.details[0]).toMatchObject({ field: 'tenant', rule: 'request_rate_limit' });
      expect(await statusBeforeBody(h.url, '/v1/schedules', auth)).toBe(429);
      await h.http().get('/v1/jobs?limit=1').set('Authorization', auth).expect(429); // one budget
    });
  });

  it('an oversize body spends one too', async () => {
    const auth = `Bearer ${(await h.createTenant('oversize')).apiKey}`;
    await clockHeld(h, async () => {
      const big = { key: 'k', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', payload: 'x'.repeat(70_000) };
      for (let i = 0; i < 5; i++) await h.http().post('/v1/schedules').set('Authorization', auth).send(big).expect(413);
      await h.http().post('/v1/schedules').set('Authorization', auth).send(big).expect(429);
    });
  });

  it('a readable body spends once: 5 valid requests with bodies fit a budget of 5', async () => {
    const auth = `Bearer ${(await h.createTenant('valid')).apiKey}`;
    await clockHeld(h, async () => {
      for (let i = 0; i < 5; i++) {
        await h.http().post('/v1/schedules').set('Authorization', auth).send({ key: `s-${i}`, kind: 'noop', cron: '0 * * * *', timezone: 'UTC' }).expect(201);
      }
      await h.http().get('/v1/jobs?limit=1').set('Authorization', auth).expect(429);
    });
  });

  it('on an ingest route a broken body spends one job of the ingest budget, not a request', async () => {
    const tenant = await h.createTenant('ingester', 1); // 1 job/s: a burst of 1,000
    const auth = `Bearer ${tenant.apiKey}`;
    await clockHeld(h, async () => {
      const bad = { kind: 'noop', key: 'bad', runAt: 'not a date' };
      await h.http().post('/v1/jobs/batch').set('Authorization', auth).send({ jobs: Array.from({ length: 999 }, () => bad) }).expect(200);
      await broken(auth, '/v1/jobs').expect(400); // the 1,000th job
      await h.http().post('/v1/jobs').set('Authorization', auth).send({ kind: 'noop', key: 'ok', runAt: inMs(DAY) }).expect(429);
      expect(await statusBeforeBody(h.url, '/v1/jobs', auth)).toBe(429);
      await h.http().get('/v1/jobs?limit=1').set('Authorization', auth).expect(200); // its request budget is untouched
    });
  });
});
