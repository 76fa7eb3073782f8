import { DEFAULT_SHARE } from '@almanac/domain';
import type { TenantKeysRepository, TenantRecord, TenantsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { createHash } from 'node:crypto';
import { loadApiSettings } from '../api-settings';
import { ALL_SOURCES_LOOKUP_FACTOR, TenantAuthService } from './tenant-auth.service';

/** A repository fake from a key → tenant function, read at call time (a test may swap it). */
function viaTenant(fake: { findByApiKey: (k: string) => Promise<TenantRecord | null> }): TenantsRepository {
  return {
    findKey: async (k: string) => {
      const t = await fake.findByApiKey(k);
      return t ? { tenant: t, keyId: 1 } : null;
    },
  } as unknown as TenantsRepository;
}

/** A key of the shape API keys have (`alm_` and 43 base64url characters), named for the test. */
const shaped = (name: string) => `alm_${name.padEnd(43, 'x')}`;

/** Last-use writes are not what these specs look at. */
const NO_KEYS = { touch: async () => undefined } as unknown as TenantKeysRepository;

describe('TenantAuthService', () => {
  const tenant: TenantRecord = { id: 7, name: 'acme', createdAt: new Date(0), rateLimitPerSecond: null, maxSchedules: null, share: DEFAULT_SHARE, disabled: false, retentionSeconds: null, keysAfterRetention: 'reserved', keyReservationSeconds: null, storage: { maxStoredBytes: null, storedBytes: 0, measuredAt: null } };

  /** A repository that knows one key, alm_good, and records every lookup. */
  function recordingRepo() {
    const lookups: string[] = [];
    const repo = {
      findKey: async (key: string) => {
        lookups.push(key);
        return key === shaped('good') ? { tenant, keyId: 1 } : null;
      },
    } as unknown as TenantsRepository;
    return { repo, lookups };
  }

  it('asks the database once per key per TTL, for known and unknown keys alike', async () => {
    const { repo, lookups } = recordingRepo();
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '10000' }), clock);
    for (let i = 0; i < 5; i++) {
      expect(await auth.authenticate(shaped('good'))).toBe(tenant);
      expect(await auth.authenticate(shaped('bad'))).toBeNull();
    }
    expect(lookups).toEqual([shaped('good'), shaped('bad')]);
    clock.advance(10_001);
    await auth.authenticate(shaped('good'));
    expect(lookups).toEqual([shaped('good'), shaped('bad'), shaped('good')]);
  });

  it('a flood of random keys is refused past the lookup rate (503, Retry-After) and never evicts a known key', async () => {
    const { repo, lookups } = recordingRepo();
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '10' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    const answers = await Promise.allSettled(Array.from({ length: 60_000 }, (_, i) => auth.authenticate(shaped(`random_${i}`))));
    expect(lookups).toHaveLength(10); // one bucket: the good key plus nine random ones
    const refused = answers.filter((a) => a.status === 'rejected');
    expect(refused).toHaveLength(60_000 - 9);
    expect(refused[0].reason).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
    expect(await auth.authenticate(shaped('good'))).toBe(tenant); // still cached: no lookup
    expect(lookups).toHaveLength(10);
  });

  it('refuses a malformed token before any lookup: a flood of them leaves the lookup budget to real keys', async () => {
    const { repo, lookups } = recordingRepo();
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '1' }), new ManualClock(0));
    for (const junk of ['alm_short', 'Bearer', 'x'.repeat(47), `alm_${'!'.repeat(43)}`, `${shaped('good')} `]) {
      for (let i = 0; i < 100; i++) expect(await auth.authenticate(junk)).toBeNull();
    }
    expect(lookups).toEqual([]);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant); // the one lookup of this second
  });

  it('unknown keys filling their own cache do not push a known key out', async () => {
    const fake = { findByApiKey: async (key: string): Promise<TenantRecord | null> => (key === shaped('good') ? tenant : null) };
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(viaTenant(fake), NO_KEYS, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '1000000' }), clock);
    await auth.authenticate(shaped('good'));
    for (let i = 0; i < 60_000; i++) await auth.authenticate(shaped(`random_${i}`));
    const lookups: string[] = [];
    fake.findByApiKey = async (k) => {
      lookups.push(k);
      return null;
    };
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    expect(lookups).toEqual([]);
  });

  it('concurrent requests with one uncached key make one lookup', async () => {
    let calls = 0;
    const repo = viaTenant({
      findByApiKey: async () => {
        calls++;
        return tenant;
      },
    });
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({}), new ManualClock(0));
    await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(shaped('good'))));
    expect(calls).toBe(1);
  });

  it('every caller sharing a hung lookup is answered within the deadline: the tenant it knew, else a timeout', async () => {
    let hang = false;
    const repo = viaTenant({
      findByApiKey: async (key: string) => (hang ? new Promise<never>(() => undefined) : key === shaped('good') ? tenant : null),
    });
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_REQUEST_TIMEOUT_MS: '100' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    hang = true; // the database stops answering (SIGSTOP): statement_timeout cannot fire either
    clock.advance(1001);
    const t0 = Date.now();
    // The first caller starts the lookup; the others share it, and each is bounded on its own.
    expect(await Promise.all(Array.from({ length: 5 }, () => auth.authenticate(shaped('good'))))).toEqual(Array(5).fill(tenant));
    expect(Date.now() - t0).toBeLessThan(1000);
    await expect(Promise.all([auth.authenticate(shaped('new')), auth.authenticate(shaped('new'))])).rejects.toThrow(/within 50 ms/) // half the request deadline;
  });

  it("spends a source's own lookup budget: one address's flood of well-shaped random keys leaves other addresses' keys answering, and all sources together are bounded", async () => {
    const repo = viaTenant({ findByApiKey: async (key: string) => (key === shaped('good') ? tenant : null) });
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' }), new ManualClock(0));
    for (let i = 0; i < 3; i++) expect(await auth.authenticate(shaped(`junk_${i}`), '203.0.113.9')).toBeNull();
    await expect(auth.authenticate(shaped('junk_x'), '203.0.113.9')).rejects.toMatchObject({ status: 503 });
    expect(await auth.authenticate(shaped('good'), '198.51.100.7')).toBe(tenant); // another client, uncached key
    // Over all sources: ALL_SOURCES_LOOKUP_FACTOR times one source's rate (4 spent so far).
    for (let i = 0; i < 3 * ALL_SOURCES_LOOKUP_FACTOR - 4; i++) await auth.authenticate(shaped(`spread_${i}`), `192.0.2.${i}`);
    await expect(auth.authenticate(shaped('spread_x'), '192.0.2.250')).rejects.toMatchObject({ status: 503 });
  });

  it('past the lookup rate, a tenant known a moment ago still gets in; a key found gone is never honoured again', async () => {
    const keys = new Map<string, TenantRecord | null>([[shaped('good'), tenant], [shaped('revoked'), { ...tenant, id: 8 }]]);
    const repo = viaTenant({ findByApiKey: async (key: string) => keys.get(key) ?? null });
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    expect((await auth.authenticate(shaped('revoked')))?.id).toBe(8);
    clock.advance(1001);
    keys.set(shaped('revoked'), null); // deleted meanwhile
    expect(await auth.authenticate(shaped('revoked'))).toBeNull();
    clock.advance(1001); // both entries expired
    // A flood of random keys empties the lookup budget...
    for (let i = 0; i < 3; i++) await auth.authenticate(shaped(`random_${i}`));
    await expect(auth.authenticate(shaped('random_x'))).rejects.toMatchObject({ status: 503 });
    // ...yet the known tenant is still served from its expired entry,
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    // and the revoked key is answered from what was found last (gone), never from what it had before.
    expect(await auth.authenticate(shaped('revoked'))).toBeNull();
  });

  it('a flood of random keys that lasts longer than the stale grace still leaves known tenants getting in: their refreshes spend no lookup budget', async () => {
    const { repo, lookups } = recordingRepo();
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, NO_KEYS, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    for (let minute = 0; minute < 10; minute++) {
      clock.advance(60_000);
      for (let i = 0; i < 3 * ALL_SOURCES_LOOKUP_FACTOR; i++) await auth.authenticate(shaped(`random_${minute}_${i}`), `192.0.2.${i}`).catch(() => null);
      await expect(auth.authenticate(shaped('another'), '198.51.100.7')).rejects.toMatchObject({ status: 503 }); // the budget is spent
      expect(await auth.authenticate(shaped('good'), '198.51.100.7')).toBe(tenant);
    }
    expect(lookups.filter((k) => k === shaped('good'))).toHaveLength(11); // a refresh each time its entry had expired
  });

  it('a key revoked while its lookup hangs is refused, and what that lookup read is not kept', async () => {
    let lookup: (key: string) => Promise<TenantRecord | null> = async () => tenant;
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(viaTenant({ findByApiKey: (k) => lookup(k) }), NO_KEYS, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_REQUEST_TIMEOUT_MS: '100' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    clock.advance(1001); // expired, within the stale grace
    let finish!: (t: TenantRecord) => void;
    lookup = () => new Promise((r) => (finish = r)); // the database stalls
    const request = auth.authenticate(shaped('good'));
    auth.forgetKey(createHash('sha256').update(shaped('good'), 'utf8').digest('base64')); // revoked meanwhile
    await expect(request).rejects.toThrow(/key lookup did not answer/); // not the tenant it had before
    finish(tenant); // the stalled lookup, which read the key before the revocation, comes back
    await new Promise((r) => setImmediate(r));
    lookup = async () => null;
    expect(await auth.authenticate(shaped('good'))).toBeNull();
  });
});
