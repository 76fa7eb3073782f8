import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN, type ApiHarness, clockHeld, startApi } from './api-harness';

/** A well-formed key no one was given: `alm_` and 43 random base64url characters. */
const randomKey = () => `alm_${randomBytes(32).toString('base64url')}`;

/**
 * Well-formed random keys, sent from many source addresses (ALMANAC_TRUST_PROXY: loopback, so
 * X-Forwarded-For names the client), cost no database lookup and no budget a real key needs.
 * Lookups per source address: 3 a second (the old total over all sources was five times that).
 */
describe('a flood of random well-formed keys from many sources', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    h = await startApi({ ALMANAC_TRUST_PROXY: 'loopback', ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' });
  });
  afterAll(() => h.close());

  /** 10 addresses, 3 random keys each (within each address's rate); the statuses answered. */
  async function flood(http: ApiHarness['http']): Promise<Set<number>> {
    const sent = Array.from({ length: 30 }, (_, i) =>
      http().get('/v1/jobs').set({ Authorization: `Bearer ${randomKey()}`, 'X-Forwarded-For': `203.0.113.${i % 10}` }),
    );
    return new Set((await Promise.all(sent)).map((r) => r.status));
  }

  it('leaves a real key not yet cached (a new tenant, a new key) authenticating, from any address', async () => {
    await clockHeld(h, async () => {
      const answered = await flood(h.http);
      const { id, apiKey } = await h.createTenant('flooded');
      await h.http().get('/v1/jobs').set({ Authorization: `Bearer ${apiKey}`, 'X-Forwarded-For': '198.51.100.7' }).expect(200);
      const another = (await h.http().post(`/v1/admin/tenants/${id}/keys`).set(admin).expect(201)).body.apiKey as string;
      await flood(h.http);
      await h.http().get('/v1/jobs').set({ Authorization: `Bearer ${another}`, 'X-Forwarded-For': '198.51.100.8' }).expect(200);
      expect(answered).toEqual(new Set([401])); // refused as unknown, never 503: none was looked up
    });
  });

  it('a key created on another replica authenticates at once on this one, flood or not; a revoked one is refused', async () => {
    const b = await h.replica();
    await flood(b.http);
    const { id, apiKey } = await h.createTenant('elsewhere'); // on replica h
    const auth = { Authorization: `Bearer ${apiKey}`, 'X-Forwarded-For': '198.51.100.9' };
    await b.http().get('/v1/jobs').set(auth).expect(200); // no wait for any event: b reads the keys created since it last looked
    const second = (await h.http().post(`/v1/admin/tenants/${id}/keys`).set(admin).expect(201)).body.apiKey as string;
    await b.http().get('/v1/jobs').set({ Authorization: `Bearer ${second}` }).expect(200);
    const keys = (await h.http().get(`/v1/admin/tenants/${id}/keys`).set(admin).expect(200)).body.items as { id: number }[];
    await h.http().delete(`/v1/admin/tenants/${id}/keys/${keys[1].id}`).set(admin).expect(204);
    await h.http().get('/v1/jobs').set({ Authorization: `Bearer ${second}` }).expect(401);
    // A replica started after the revocation never knew the key: its start-up read takes live keys only.
    const c = await h.replica();
    await c.http().get('/v1/jobs').set({ Authorization: `Bearer ${second}` }).expect(401);
    await c.http().get('/v1/jobs').set(auth).expect(200);
  });
});
