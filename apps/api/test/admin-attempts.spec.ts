import { ADMIN_FAILURES } from '../src/auth/guards';
import { ADMIN_TOKEN, type ApiHarness, clockHeld, startApi } from './api-harness';

/** Each test its own client address (X-Forwarded-For from the trusted loopback proxy); the clock held, so no bucket refills. */
describe('the admin token attempt limit covers the console sign-in', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_TRUST_PROXY: 'loopback' });
  });
  afterAll(() => h.close());

  const from = (address: string) => ({
    get: (path: string) => h.http().get(path).set('X-Forwarded-For', address),
    post: (path: string) => h.http().post(path).set('X-Forwarded-For', address),
  });
  const adminApi = (address: string) => from(address).get('/v1/admin/tenants').set('Authorization', `Bearer ${ADMIN_TOKEN}`);

  it('past the wrong secrets an address may try, its admin token no longer signs in (nor calls the admin API); a tenant key still does', async () => {
    const acme = await h.createTenant('acme');
    const client = from('198.51.100.1');
    await clockHeld(h, async () => {
      for (let i = 0; i < ADMIN_FAILURES; i++) await client.post('/console/sign-in').type('form').send({ token: `guess-${i}` }).expect(401);
      const locked = await client.post('/console/sign-in').type('form').send({ token: ADMIN_TOKEN }).expect(429);
      expect(locked.text).toContain('Too many wrong secrets from this address');
      await client.post('/console/sign-in').type('form').send({ token: 'guess-x' }).expect(429); // a right guess looks like a wrong one
      await adminApi('198.51.100.1').expect(429);
      await client.post('/console/sign-in').type('form').send({ token: acme.apiKey }).expect(303);
    });
  });

  it('ends a session whose admin token was rotated at its first page load, and its resends cost the address no admin attempts', async () => {
    const client = from('198.51.100.2');
    const stale = 'almanac_console=the-admin-token-before-rotation';
    await clockHeld(h, async () => {
      for (let i = 0; i < ADMIN_FAILURES + 5; i++) {
        const page = await client.get('/console').set('Cookie', stale).expect(303); // a client that keeps the cookie, as behind a shared proxy
        expect(page.headers.location).toBe('/console/sign-in?why=ended');
        expect(String(page.headers['set-cookie'])).toMatch(/^almanac_console=; Max-Age=0; Path=\/console/);
      }
      await adminApi('198.51.100.2').expect(200);
      await client.post('/console/sign-in').type('form').send({ token: ADMIN_TOKEN }).expect(303);
    });
    const signIn = await client.get('/console/sign-in?why=ended').expect(200);
    expect(signIn.text).toContain('Your session no longer signs in here: its key was revoked, or the admin token changed. Sign in again.');
  });

  it('still counts each different wrong secret, from the sign-in form or a cookie, but not the same one sent again', async () => {
    const client = from('198.51.100.3');
    await clockHeld(h, async () => {
      for (let i = 0; i < 3; i++) await client.post('/console/sign-in').type('form').send({ token: 'the-same-typo' }).expect(401);
      for (let i = 0; i < ADMIN_FAILURES - 2; i++) await client.get('/console/jobs').set('Cookie', `almanac_console=guess-${i}`).expect(303);
      await adminApi('198.51.100.3').expect(200); // 1 + ADMIN_FAILURES - 2 counted: one left
      await client.get('/console').set('Cookie', 'almanac_console=guess-last').expect(303);
      await adminApi('198.51.100.3').expect(429);
      const locked = await client.get('/console').set('Cookie', `almanac_console=${ADMIN_TOKEN}`).expect(303);
      expect(locked.headers.location).toBe('/console/sign-in?why=locked'); // the operator's own session is kept for after it
      expect(locked.headers['set-cookie']).toBeUndefined();
    });
  });
});
