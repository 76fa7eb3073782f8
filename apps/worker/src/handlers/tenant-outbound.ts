import { type HostRule, parseHostRule } from '@almanac/domain';
import { type TenantOutboundRecord, TenantOutboundRepository } from '@almanac/persistence';
import type { DataSource } from 'typeorm';
import { ReadThroughCache } from '@almanac/platform';

/** A tenant's rules for `http` calls and `email` jobs as the worker applies them. */
export interface TenantOutbound {
  allowHosts: readonly HostRule[];
  /** Live signing secrets, newest first (two during a rotation's overlap). */
  secrets: readonly string[];
  /** Its `email` jobs may send (`emailAllowed`, set by an operator); false: they are discarded. */
  emailAllowed: boolean;
}

export interface TenantOutboundSource {
  /** The tenant's rules; null when the tenant does not exist. Throws when they cannot be read in time. */
  get(tenantId: number): Promise<TenantOutbound | null>;
}

export interface TenantOutboundCacheOptions {
  /** A tenant's rules are re-read when older than this (an allow-list or emailAllowed change, or a rotation, lands within it). */
  ttlMs: number;
  /** The longest a job waits for a read. */
  waitMs: number;
  /** While Postgres cannot answer, rules up to this old are used rather than failing the attempt. */
  staleMs: number;
  /** Tenants kept at once (the oldest read is dropped first). */
  maxTenants: number;
}

export const TENANT_OUTBOUND_CACHE: TenantOutboundCacheOptions = { ttlMs: 5_000, waitMs: 2_000, staleMs: 60_000, maxTenants: 10_000 };

/** A tenant's rules, read at most once per `ttlMs` through a ReadThroughCache (shared reads, bounded waits, stale rules while Postgres fails). */
export class TenantOutboundCache implements TenantOutboundSource {
  private readonly cache: ReadThroughCache<number, TenantOutbound | null>;

  constructor(
    private readonly read: (tenantId: number) => Promise<TenantOutboundRecord | null>,
    opts: TenantOutboundCacheOptions = TENANT_OUTBOUND_CACHE,
    now: () => number = Date.now,
  ) {
    this.cache = new ReadThroughCache({ ...opts, maxEntries: opts.maxTenants, now });
  }

  get(tenantId: number): Promise<TenantOutbound | null> {
    return this.cache.get(tenantId, async () => {
      const row = await this.read(tenantId);
      return row && toOutbound(row);
    }, `tenant ${tenantId}'s outbound rules`);
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
  return { allowHosts, secrets: row.secrets, emailAllowed: row.emailAllowed };
}

/**
 * Reads a tenant's rules through the worker's pool, in a transaction whose statement Postgres
 * itself ends after `waitMs`: a read the job stopped waiting for must not hold a connection
 * that claims and completions need for the pool's 30 s statement timeout.
 */
export function outboundRulesReader(dataSource: DataSource, waitMs = TENANT_OUTBOUND_CACHE.waitMs): (tenantId: number) => Promise<TenantOutboundRecord | null> {
  const repo = new TenantOutboundRepository(dataSource);
  return (tenantId) =>
    dataSource.transaction(async (m) => {
      await m.query(`SELECT set_config('statement_timeout', $1, true)`, [`${waitMs}ms`]);
      return repo.forDelivery(tenantId, m);
    });
}
