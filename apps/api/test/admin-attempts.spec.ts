import { ADMIN_FAILURES } from '../src/auth/guards';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

describe('the admin token attempt limit covers the console sign-in', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  it('past the wrong secrets an address may try, its admin token no longer signs in (nor calls the admin API); a tenant key still does', async () => {
    const acme = await h.createTenant('acme');
    for (let i = 0; i < ADMIN_FAILURES; i++) await h.http().post('/console/sign-in').type('form').send({ token: `guess-${i}` }).expect(401);
    await h.http().post('/console/sign-in').type('form').send({ token: ADMIN_TOKEN }).expect(401);
    await h.http().get('/v1/admin/tenants').set('Authorization', `Bearer ${ADMIN_TOKEN}`).expect(429);
    await h.http().post('/console/sign-in').type('form').send({ token: acme.apiKey }).expect(303);
  });
});
