import { DEFAULT_SHARE } from '@almanac/domain';
import { hashApiKey, type TenantKeysRepository, type TenantRecord, type TenantsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { loadApiSettings } from '../api-settings';
import { TenantAuthService } from './tenant-auth.service';

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

const hashOf = (key: string) => hashApiKey(key).toString('base64');

/**
 * The keys repository as the service reads it: the hashes of `live` keys (a test may add one),
 * each read recorded by the id it reads above; last-use writes are not what these specs look at.
 */
function liveKeys(...live: string[]) {
  const reads: number[] = [];
  const repo = {
    touch: async () => undefined,
    keyHashesAfter: async (afterId: number) => {
      reads.push(afterId);
      return live.map((k, i) => ({ id: i + 1, hash: hashOf(k), live: true, settled: true })).filter((r) => r.id > afterId);
    },
  } as unknown as TenantKeysRepository;
  return { repo, live, reads };
}

const GOOD = liveKeys(shaped('good')).repo;

describe('TenantAuthService', () => {
  const tenant: TenantRecord = { id: 7, name: 'acme', createdAt: new Date(0), rateLimitPerSecond: null, maxSchedules: null, share: DEFAULT_SHARE, disabled: false, retentionSeconds: null, keysAfterRetention: 'reserved', keyReservationSeconds: null, storage: { maxStoredBytes: null, storedBytes: 0, measuredAt: null } };

  /** A repository that knows two keys, good and new, and records every lookup. */
  function recordingRepo() {
    const lookups: string[] = [];
    const repo = {
      findKey: async (key: string) => {
        lookups.push(key);
        return key === shaped('good') || key === shaped('new') ? { tenant, keyId: 1 } : null;
      },
    } as unknown as TenantsRepository;
    return { repo, lookups };
  }

  it('asks the database once per key per TTL; a key not among the live ones never', async () => {
    const { repo, lookups } = recordingRepo();
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, GOOD, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '10000' }), clock);
    for (let i = 0; i < 5; i++) {
      expect(await auth.authenticate(shaped('good'))).toBe(tenant);
      expect(await auth.authenticate(shaped('bad'))).toBeNull();
    }
    expect(lookups).toEqual([shaped('good')]);
    clock.advance(10_001);
    await auth.authenticate(shaped('good'));
    expect(lookups).toEqual([shaped('good'), shaped('good')]);
  });

  it('a flood of random keys from many sources costs no lookup and no budget: a key created meanwhile, not cached, gets in at once', async () => {
    const { repo, lookups } = recordingRepo();
    const keys = liveKeys(shaped('good'));
    const auth = new TenantAuthService(repo, keys.repo, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '1' }), new ManualClock(0));
    const answers = await Promise.all(Array.from({ length: 60_000 }, (_, i) => auth.authenticate(shaped(`random_${i}`), () => `192.0.2.${i % 250}`)));
    expect(answers.every((a) => a === null)).toBe(true);
    expect(lookups).toEqual([]);
    expect(keys.reads).toEqual([0]); // one read of the live keys, shared by all 60,000
    await auth.authenticate(shaped('random_x'), () => '192.0.2.1');
    expect(await auth.authenticate(shaped('good'), () => '192.0.2.1')).toBe(tenant); // the source that flooded, too
    keys.live.push(shaped('new')); // created since, on any replica: no event needed
    expect(await auth.authenticate(shaped('new'), () => '198.51.100.7')).toBe(tenant);
    expect(lookups).toEqual([shaped('good'), shaped('new')]);
  });

  it('refuses a malformed token before any lookup or read of the live keys', async () => {
    const { repo, lookups } = recordingRepo();
    const keys = liveKeys(shaped('good'));
    const auth = new TenantAuthService(repo, keys.repo, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '1' }), new ManualClock(0));
    for (const junk of ['alm_short', 'Bearer', 'x'.repeat(47), `alm_${'!'.repeat(43)}`, `${shaped('good')} `]) {
      for (let i = 0; i < 100; i++) expect(await auth.authenticate(junk)).toBeNull();
    }
    expect(lookups).toEqual([]);
    expect(keys.reads).toEqual([]);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant); // the one lookup of this second
  });

  it('concurrent requests with one uncached key make one lookup', async () => {
    let calls = 0;
    const repo = viaTenant({
      findByApiKey: async () => {
        calls++;
        return tenant;
      },
    });
    const auth = new TenantAuthService(repo, GOOD, loadApiSettings({}), new ManualClock(0));
    await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(shaped('good'))));
    expect(calls).toBe(1);
  });

  it('every caller sharing a hung lookup is answered within the deadline: the tenant it knew, else a timeout', async () => {
    let hang = false;
    const repo = viaTenant({
      findByApiKey: async (key: string) => (hang ? new Promise<never>(() => undefined) : key === shaped('good') ? tenant : null),
    });
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(repo, liveKeys(shaped('good'), shaped('new')).repo, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_REQUEST_TIMEOUT_MS: '100' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    hang = true; // the database stops answering (SIGSTOP): statement_timeout cannot fire either
    clock.advance(1001);
    const t0 = Date.now();
    // The first caller starts the lookup; the others share it, and each is bounded on its own.
    expect(await Promise.all(Array.from({ length: 5 }, () => auth.authenticate(shaped('good'))))).toEqual(Array(5).fill(tenant));
    expect(Date.now() - t0).toBeLessThan(1000);
    await expect(Promise.all([auth.authenticate(shaped('new')), auth.authenticate(shaped('new'))])).rejects.toThrow(/within 50 ms/) // half the request deadline;
  });

  it("lookups of live keys not cached spend their source's budget: one address past it gets 503, however many others look up", async () => {
    const spread = Array.from({ length: 60 }, (_, i) => shaped(`spread_${i}`));
    const repo = viaTenant({ findByApiKey: async (key: string) => (key === shaped('good') ? tenant : null) });
    const live = liveKeys(shaped('good'), ...spread, ...[0, 1, 2, 3].map((i) => shaped(`gone_${i}`))); // gone: revoked, the news not here yet
    const auth = new TenantAuthService(repo, live.repo, loadApiSettings({ ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' }), new ManualClock(0));
    for (let i = 0; i < 3; i++) expect(await auth.authenticate(shaped(`gone_${i}`), () => '203.0.113.9')).toBeNull();
    await expect(auth.authenticate(shaped('gone_3'), () => '203.0.113.9')).rejects.toMatchObject({ status: 503 });
    // Twenty addresses, three lookups each: no budget over all sources for them to empty.
    for (let i = 0; i < spread.length; i++) expect(await auth.authenticate(spread[i], () => `192.0.2.${i % 20}`)).toBeNull();
    expect(await auth.authenticate(shaped('good'), () => '198.51.100.7')).toBe(tenant); // another client, uncached key
  });

  it('past its source\'s lookup rate, a tenant known a moment ago still gets in; a key found gone is never honoured again', async () => {
    const keys = new Map<string, TenantRecord | null>([[shaped('good'), tenant], [shaped('revoked'), { ...tenant, id: 8 }]]);
    const repo = viaTenant({ findByApiKey: async (key: string) => keys.get(key) ?? null });
    const clock = new ManualClock(0);
    const others = [0, 1, 2, 3].map((i) => shaped(`other_${i}`));
    const live = liveKeys(shaped('good'), shaped('revoked'), ...others);
    const auth = new TenantAuthService(repo, live.repo, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    expect((await auth.authenticate(shaped('revoked')))?.id).toBe(8);
    clock.advance(1001);
    keys.set(shaped('revoked'), null); // deleted meanwhile
    expect(await auth.authenticate(shaped('revoked'))).toBeNull();
    clock.advance(1001); // both entries expired
    // Lookups of keys not cached empty the source's budget...
    for (let i = 0; i < 3; i++) await auth.authenticate(others[i]);
    await expect(auth.authenticate(others[3])).rejects.toMatchObject({ status: 503 });
    // ...yet the known tenant is still served from its expired entry,
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    // and the revoked key is answered from what was found last (gone), never from what it had before.
    expect(await auth.authenticate(shaped('revoked'))).toBeNull();
  });

  it('a spent lookup budget that lasts longer than the stale grace still leaves known tenants getting in: their refreshes spend none', async () => {
    const { repo, lookups } = recordingRepo();
    const clock = new ManualClock(0);
    const others = Array.from({ length: 40 }, (_, i) => shaped(`other_${i}`));
    const auth = new TenantAuthService(repo, liveKeys(shaped('good'), ...others).repo, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_AUTH_LOOKUPS_PER_SECOND: '3' }), clock);
    expect(await auth.authenticate(shaped('good'), () => '198.51.100.7')).toBe(tenant);
    for (let minute = 0; minute < 10; minute++) {
      clock.advance(60_000);
      for (let i = 0; i < 3; i++) await auth.authenticate(others[minute * 4 + i], () => '198.51.100.7');
      await expect(auth.authenticate(others[minute * 4 + 3], () => '198.51.100.7')).rejects.toMatchObject({ status: 503 }); // the budget is spent
      expect(await auth.authenticate(shaped('good'), () => '198.51.100.7')).toBe(tenant);
    }
    expect(lookups.filter((k) => k === shaped('good'))).toHaveLength(11); // a refresh each time its entry had expired
  });

  it('a key revoked while its lookup hangs is refused, and what that lookup read is not kept', async () => {
    let lookup: (key: string) => Promise<TenantRecord | null> = async () => tenant;
    const clock = new ManualClock(0);
    const auth = new TenantAuthService(viaTenant({ findByApiKey: (k) => lookup(k) }), GOOD, loadApiSettings({ ALMANAC_AUTH_CACHE_TTL_MS: '1000', ALMANAC_REQUEST_TIMEOUT_MS: '100' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    clock.advance(1001); // expired, within the stale grace
    let finish!: (t: TenantRecord) => void;
    lookup = () => new Promise((r) => (finish = r)); // the database stalls
    const request = auth.authenticate(shaped('good'));
    auth.forgetKey(hashOf(shaped('good'))); // revoked meanwhile
    await expect(request).rejects.toThrow(/key lookup did not answer/); // not the tenant it had before
    finish(tenant); // the stalled lookup, which read the key before the revocation, comes back
    await new Promise((r) => setImmediate(r));
    lookup = async () => null;
    expect(await auth.authenticate(shaped('good'))).toBeNull();
  });

  it("finds a new key at once after the host's wall clock was stepped back: reads are spaced by a monotonic clock", async () => {
    const { repo } = recordingRepo();
    const keys = liveKeys(shaped('good'));
    const clock = new ManualClock(3_600_000);
    const auth = new TenantAuthService(repo, keys.repo, loadApiSettings({ ALMANAC_REQUEST_TIMEOUT_MS: '1000' }), clock);
    expect(await auth.authenticate(shaped('good'))).toBe(tenant);
    clock.set(new Date(0)); // NTP steps the clock back an hour
    keys.live.push(shaped('new')); // created on another replica
    expect(await auth.authenticate(shaped('new'))).toBe(tenant); // not 503 after half the deadline
  });
});
