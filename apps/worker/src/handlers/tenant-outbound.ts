import { type HostRule, parseHostRule } from '@almanac/domain';
import type { TenantOutboundRecord } from '@almanac/persistence';
import { ReadThroughCache, within } from '@almanac/platform';

/** A tenant's rules for `http` calls as the worker applies them. */
export interface TenantOutbound {
  allowHosts: readonly HostRule[];
  /** Live signing secrets, newest first (two during a rotation's overlap). */
  secrets: readonly string[];
}

export interface TenantOutboundSource {
  /** The tenant's rules; null when the tenant does not exist. Throws when they cannot be read in time. */
  get(tenantId: number): Promise<TenantOutbound | null>;
}

export interface TenantOutboundCacheOptions {
  /** A tenant's rules are re-read when older than this (an allow-list change or a rotation lands within it). */
  ttlMs: number;
  /** The longest a job waits for a read. */
  waitMs: number;
  /** While Postgres cannot answer, rules up to this old are used rather than failing the attempt. */
  staleMs: number;
  /** Tenants kept at once (the oldest read is dropped first). */
  maxTenants: number;
}

export const TENANT_OUTBOUND_CACHE: TenantOutboundCacheOptions = { ttlMs: 5_000, waitMs: 2_000, staleMs: 60_000, maxTenants: 10_000 };

/**
 * Reads a tenant's rules at most once per `ttlMs` (concurrent jobs of one tenant share a read),
 * waits at most `waitMs` for one, and falls back to rules up to `staleMs` old when the read fails.
 */
export class TenantOutboundCache implements TenantOutboundSource {
  private readonly cache: ReadThroughCache<number, TenantOutbound | null>;

  constructor(
    private readonly read: (tenantId: number) => Promise<TenantOutboundRecord | null>,
    private readonly opts: TenantOutboundCacheOptions = TENANT_OUTBOUND_CACHE,
    now: () => number = Date.now,
  ) {
    this.cache = new ReadThroughCache({ ttlMs: opts.ttlMs, maxEntries: opts.maxTenants }, now);
  }

  async get(tenantId: number): Promise<TenantOutbound | null> {
    const hit = this.cache.peek(tenantId);
    if (hit && hit.expiredForMs < 0) return hit.value;
    const load = this.cache.load(tenantId, async () => {
      const row = await this.read(tenantId);
      return row && toOutbound(row);
    });
    try {
      return await within(this.opts.waitMs, load, `tenant ${tenantId}'s outbound rules`);
    } catch (err) {
      if (hit && hit.expiredForMs + this.opts.ttlMs < this.opts.staleMs) return hit.value;
      throw err;
    }
  }
}

function toOutbound(row: TenantOutboundRecord): TenantOutbound {
  // Entries were checked by the API as they were set; one that no longer parses allows nothing.
  const allowHosts = row.allowHosts.flatMap((h) => {
    try {
      return [parseHostRule(h, 'httpAllowHosts')];
    } catch {
      return [];
    }
  });
  return { allowHosts, secrets: row.secrets };
}
