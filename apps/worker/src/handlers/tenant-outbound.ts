import { type HostRule, parseHostRule } from '@almanac/domain';
import { type TenantOutboundRecord, TenantOutboundRepository } from '@almanac/persistence';
import type { DataSource } from 'typeorm';
import { within } from '@almanac/platform';

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

interface Entry {
  value: TenantOutbound | null;
  readAt: number;
}

/**
 * Reads a tenant's rules at most once per `ttlMs` (concurrent jobs of one tenant share a read),
 * waits at most `waitMs` for one, and falls back to rules up to `staleMs` old when the read fails.
 */
export class TenantOutboundCache implements TenantOutboundSource {
  private readonly entries = new Map<number, Entry>();
  private readonly reads = new Map<number, Promise<TenantOutbound | null>>();

  constructor(
    private readonly read: (tenantId: number) => Promise<TenantOutboundRecord | null>,
    private readonly opts: TenantOutboundCacheOptions = TENANT_OUTBOUND_CACHE,
    private readonly now: () => number = Date.now,
  ) {}

  async get(tenantId: number): Promise<TenantOutbound | null> {
    const hit = this.entries.get(tenantId);
    const at = this.now();
    if (hit && at - hit.readAt < this.opts.ttlMs) return hit.value;
    try {
      return await within(this.opts.waitMs, this.load(tenantId), `tenant ${tenantId}'s outbound rules`);
    } catch (err) {
      if (hit && at - hit.readAt < this.opts.staleMs) return hit.value;
      throw err;
    }
  }

  private load(tenantId: number): Promise<TenantOutbound | null> {
    const running = this.reads.get(tenantId);
    if (running) return running;
    const started = this.now();
    const p = this.read(tenantId)
      .then((row) => {
        const value = row && toOutbound(row);
        this.entries.delete(tenantId); // re-inserted last: the Map's order is the eviction order
        this.entries.set(tenantId, { value, readAt: started });
        if (this.entries.size > this.opts.maxTenants) this.entries.delete(this.entries.keys().next().value!);
        return value;
      })
      .finally(() => this.reads.delete(tenantId));
    this.reads.set(tenantId, p);
    return p;
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
