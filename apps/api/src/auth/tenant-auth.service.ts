import { hashApiKey, isApiKeyShaped, TenantKeysRepository, TenantRecord, TenantsRepository } from '@almanac/persistence';
import { Clock, ReadThroughCache, within } from '@almanac/platform';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import { TokenBuckets } from '../rate-limit/token-bucket';
import { KnownKeys } from './known-keys';

/** Known keys cached at most (far more than tenants have keys); the oldest goes first. */
const MAX_KNOWN = 100_000;
/** Keys found gone (revoked, yet still among the known hashes) remembered at most; never displaces a key found. */
const MAX_UNKNOWN = 50_000;
/** How long past its TTL a known key may still be honoured while lookups fail (a database stall). */
export const STALE_GRACE_MS = 5 * 60_000;

/** A key's tenant and its row in tenant_keys (for its last-use time); null for a key that does not exist. */
type Found = { tenant: TenantRecord; keyId: number } | null;

/** Sources whose lookup budgets are remembered; an older one forgotten starts full again. */
const MAX_LOOKUP_SOURCES = 10_000;

/** A key's last use is written at most this often per API replica (one UPDATE for all keys used). */
export const LAST_USED_EVERY_MS = 60_000;

/**
 * Resolves a bearer key to its tenant. Answers are cached by the key's sha256 for a short TTL,
 * so authentication is not one database query per request, and a tenant's changed rate limit is
 * seen within the TTL. Unauthenticated traffic costs no lookup: a key whose hash is not among the
 * live keys' (KnownKeys) is refused without one. A budget over all sources let a flood of random
 * keys from a few addresses answer 503 to every key not cached (a new key, a new replica, a tenant
 * just enabled); random keys now spend nothing a real key needs. Lookups of keys not cached (a
 * cached key's refresh spends nothing) are still rate-limited per source address
 * (ALMANAC_AUTH_LOOKUPS_PER_SECOND per API replica; 503 with Retry-After beyond it). Concurrent
 * lookups of one key share a query.
 */
@Injectable()
export class TenantAuthService implements OnModuleInit {
  /** By the key's sha256; unknown keys in a room of their own, so a flood of random keys never evicts a valid one. */
  private readonly keyCache: ReadThroughCache<string, Found>;
  private readonly lookups = new TokenBuckets(MAX_LOOKUP_SOURCES);
  private readonly known: KnownKeys;
  /** Half the request deadline: a stalled database leaves the handler time to answer 503, not a hang. */
  private readonly waitMs: number;
  /** Keys accepted since the last write of their last-use time. */
  private used = new Set<number>();

  constructor(
    private readonly tenants: TenantsRepository,
    private readonly keys: TenantKeysRepository,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
  ) {
    this.waitMs = Math.ceil(settings.requestTimeoutMs / 2);
    this.keyCache = new ReadThroughCache<string, Found>({
      ttlMs: settings.authCacheTtlMs,
      waitMs: this.waitMs,
      staleMs: settings.authCacheTtlMs + STALE_GRACE_MS,
      maxEntries: MAX_KNOWN,
      negative: { is: (found) => found === null, max: MAX_UNKNOWN },
      now: () => clock.now().getTime(),
    });
    this.known = new KnownKeys((afterId, limit, settleMs) => keys.keyHashesAfter(afterId, limit, settleMs), () => performance.now());
  }

  /** Reads the live keys before the first request needs them; if it fails, the first unknown key reads again. */
  onModuleInit(): void {
    this.known.catchUp().catch(() => undefined);
  }

  /**
   * `source`: the request's source address (sourceOf), whose lookup budget a lookup spends; read
   * only for a lookup (parsing an IPv6 address cost ~16 µs a request, bench/ingest.ts).
   */
  async authenticate(apiKey: string, source: () => string = () => ''): Promise<TenantRecord | null> {
    // Before the cache and the lookup budget: junk tokens spent the budget of real keys (every
    // tenant whose key was not cached got 503) and filled the unknown-key cache.
    if (!isApiKeyShaped(apiKey)) return null;
    const id = hashApiKey(apiKey).toString('base64');
    if (!this.known.has(id)) {
      // Created since the last read (on any replica), or no key at all: one read, shared by every
      // request waiting, of the keys created since; bounded like a lookup, a stalled database is a 503.
      await within(this.waitMs, this.known.catchUp(), 'key list read');
      if (!this.known.has(id)) return null;
    }
    // A known key's refresh (once per TTL) spends no lookup budget: a flood of random keys that
    // drains the budget for as long as it lasts must not lock out the tenants known before it.
    const found = await this.keyCache.get(id, (previous) => this.lookUp(apiKey, source, previous != null), 'key lookup');
    if (found) this.used.add(found.keyId);
    return found?.tenant ?? null;
  }

  /**
   * Forgets a revoked key at once (this replica; AuthEvents tells the others), also what a lookup
   * in flight read before the revocation. `keyHash` is the key's sha256 in base64, as the cache is keyed.
   */
  forgetKey(keyHash: string): void {
    this.known.forget(keyHash);
    this.keyCache.forget(keyHash);
  }

  /** Forgets every cached key of a tenant whose state changed (suspended, enabled): the next request reads it again. */
  forgetTenant(tenantId: number): void {
    this.keyCache.forgetWhere((found) => found?.tenant.id === tenantId);
  }

  /** Writes the last-use time of the keys accepted since the last call; AuthEvents calls it every LAST_USED_EVERY_MS. */
  async flushLastUsed(): Promise<void> {
    if (this.used.size === 0) return;
    const ids = [...this.used];
    this.used = new Set();
    await this.keys.touch(ids, this.clock.now());
  }

  /** A database lookup, rate-limited by source unless it refreshes a `known` key (the cache shares one per key). */
  private lookUp(apiKey: string, source: () => string, known: boolean): Promise<Found> {
    if (!known) {
      const rate = this.settings.authLookupsPerSecond;
      const allowed = this.lookups.take(source(), 1, rate, rate, this.clock.now().getTime());
      if (!allowed.ok) throw overLimit(503, 'too many key lookups', 'authorization', 'lookup_rate', allowed.retryAfterMs);
    }
    return this.tenants.findKey(apiKey);
  }
}
