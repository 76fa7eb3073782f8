import { isApiKeyShaped, TenantKeysRepository, TenantRecord, TenantsRepository } from '@almanac/persistence';
import { Clock, within } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import { TokenBuckets } from '../rate-limit/token-bucket';

/** Known keys cached at most (far more than tenants have keys); the oldest goes first. */
const MAX_KNOWN = 100_000;
/** Unknown keys remembered at most; the oldest goes first. Never displaces a known key. */
const MAX_UNKNOWN = 50_000;
/** How long past its TTL a known key may still be honoured while lookups fail (a database stall). */
const STALE_GRACE_MS = 5 * 60_000;

interface Cached {
  tenant: TenantRecord | null;
  /** The key's row in tenant_keys (for its last-use time). */
  keyId?: number;
  until: number;
}

/** Key lookups over all sources, per replica, as a multiple of one source's (a bound for the database). */
export const ALL_SOURCES_LOOKUP_FACTOR = 5;
/** Sources whose lookup budgets are remembered; an older one forgotten starts full again (the total still bounds). */
const MAX_LOOKUP_SOURCES = 10_000;

/** A key's last use is written at most this often per API replica (one UPDATE for all keys used). */
export const LAST_USED_EVERY_MS = 60_000;

/**
 * Resolves a bearer key to its tenant. Answers are cached by the key's sha256 for a short TTL,
 * so authentication is not one database query per request, and a tenant's changed rate limit is
 * seen within the TTL. Unauthenticated traffic is bounded:
 * - unknown keys have a cache of their own, so a flood of random keys never evicts a valid one;
 * - lookups of keys in neither cache are rate-limited per source address
 *   (ALMANAC_AUTH_LOOKUPS_PER_SECOND per API replica, ALL_SOURCES_LOOKUP_FACTOR times that over
 *   all sources; 503 with Retry-After beyond it): one client's flood of well-shaped random keys
 *   spent a single shared budget, and every tenant whose key was not cached got 503. Concurrent
 *   lookups of one key share a query.
 */
@Injectable()
export class TenantAuthService {
  private readonly known = new Map<string, Cached>();
  private readonly unknown = new Map<string, Cached>();
  private readonly pending = new Map<string, Promise<{ tenant: TenantRecord; keyId: number } | null>>();
  private readonly lookups = new TokenBuckets(MAX_LOOKUP_SOURCES + 1);
  /** Keys revoked lately (sha256 → when): a lookup started before then is not cached. */
  private readonly changedAt = new Map<string, number>();
  /** Keys accepted since the last write of their last-use time. */
  private used = new Set<number>();

  constructor(
    private readonly tenants: TenantsRepository,
    private readonly keys: TenantKeysRepository,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
  ) {}

  /** `source`: the request's source address (sourceOf), whose lookup budget a lookup spends. */
  async authenticate(apiKey: string, source = ''): Promise<TenantRecord | null> {
    // Before the caches and the lookup budget: junk tokens spent the budget of real keys (every
    // tenant whose key was not cached got 503) and filled the unknown-key cache.
    if (!isApiKeyShaped(apiKey)) return null;
    const now = this.clock.now().getTime();
    const id = createHash('sha256').update(apiKey, 'utf8').digest('base64');
    const hit = this.known.get(id) ?? this.unknown.get(id);
    if (hit && hit.until > now) return this.markUsed(hit);
    try {
      // Inside the try: past the lookup rate (a flood of random keys) a tenant known a moment
      // ago still gets in, instead of every tenant getting 503 once its cache entry expires.
      const lookup = this.pending.get(id) ?? this.lookUp(id, apiKey, source, now);
      // Bounded for every caller, also those sharing a lookup already in flight, to half the
      // request deadline: a stalled database leaves the handler time to answer 503, not a hang.
      const found = await within(Math.ceil(this.settings.requestTimeoutMs / 2), lookup, 'key lookup');
      return found ? this.markUsed(found) : null;
    } catch (err) {
      // A tenant known a moment ago (at most STALE_GRACE_MS past its TTL) stays known while the
      // database cannot say otherwise, for another TTL: the requests behind this one do not each
      // wait for the stalled lookup.
      if (!hit?.tenant || now - hit.until > STALE_GRACE_MS) throw err;
      this.remember(id, hit.tenant, now, hit.keyId);
      return hit.tenant;
    }
  }

  /**
   * Forgets a revoked key at once (this replica; AuthEvents tells the others). `keyHash` is the
   * key's sha256 in base64, as the cache is keyed.
   */
  forgetKey(keyHash: string): void {
    this.known.delete(keyHash);
    this.pending.delete(keyHash);
    // A lookup that read the key before the revocation committed must not cache it afterwards.
    const now = this.clock.now().getTime();
    this.changedAt.set(keyHash, now);
    for (const [k, at] of this.changedAt) if (now - at > this.settings.authCacheTtlMs + 60_000) this.changedAt.delete(k);
  }

  /** Forgets every cached key of a tenant whose state changed (suspended, enabled): the next request reads it again. */
  forgetTenant(tenantId: number): void {
    for (const [id, c] of this.known) if (c.tenant?.id === tenantId) this.known.delete(id);
  }

  /** Writes the last-use time of the keys accepted since the last call; AuthEvents calls it every LAST_USED_EVERY_MS. */
  async flushLastUsed(): Promise<void> {
    if (this.used.size === 0) return;
    const ids = [...this.used];
    this.used = new Set();
    await this.keys.touch(ids, this.clock.now());
  }

  private markUsed(c: Cached | { tenant: TenantRecord; keyId: number }): TenantRecord | null {
    if (c.keyId !== undefined) this.used.add(c.keyId);
    return c.tenant;
  }

  /** One database lookup per key at a time (rate-limited by source, then over all); shared until it settles. */
  private lookUp(id: string, apiKey: string, source: string, now: number): Promise<{ tenant: TenantRecord; keyId: number } | null> {
    const rate = this.settings.authLookupsPerSecond;
    const total = rate * ALL_SOURCES_LOOKUP_FACTOR;
    for (const [bucket, r] of [[`source:${source}`, rate], ['all', total]] as const) {
      const allowed = this.lookups.take(bucket, 1, r, r, now);
      if (!allowed.ok) throw overLimit(503, 'too many key lookups', 'authorization', 'lookup_rate', allowed.retryAfterMs);
    }
    const lookup = this.tenants.findKey(apiKey).then((found) => {
      this.remember(id, found?.tenant ?? null, now, found?.keyId);
      return found;
    });
    this.pending.set(id, lookup);
    void lookup.then(
      () => this.pending.delete(id),
      () => this.pending.delete(id),
    );
    return lookup;
  }

  private remember(id: string, tenant: TenantRecord | null, now: number, keyId?: number): void {
    if (this.settings.authCacheTtlMs <= 0) return;
    if (tenant && (this.changedAt.get(id) ?? -Infinity) >= now) return; // revoked while it was looked up
    const cache = tenant ? this.known : this.unknown;
    // A key is in one cache only: a key found gone must not be honoured later from `known`.
    (tenant ? this.unknown : this.known).delete(id);
    const max = tenant ? MAX_KNOWN : MAX_UNKNOWN;
    cache.delete(id); // re-inserted last: Map order is then oldest first
    if (cache.size >= max) cache.delete(cache.keys().next().value as string);
    cache.set(id, { tenant, keyId, until: now + this.settings.authCacheTtlMs });
  }
}
