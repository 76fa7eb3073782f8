import { type HostRule, parseHostRule } from '@almanac/domain';
import { createDataSource, databaseConfigFromEnv, TenantOutboundRecord, TenantOutboundRepository } from '@almanac/persistence';
import { type Env, within } from '@almanac/platform';
import { DataSource } from 'typeorm';

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
 * The worker's rules source: Postgres through a pool of its own (2 connections, short timeouts),
 * opened on the first `http` job. The worker runtime gives handlers no DataSource (its
 * `handlers(env)` factory sees only the environment), so this one is made from the same
 * DATABASE_URL; its connections end when idle and never hold the process open.
 */
export function tenantOutboundFromDatabase(env: Env): TenantOutboundSource {
  let opening: Promise<TenantOutboundRepository> | undefined;
  const open = async (): Promise<TenantOutboundRepository> => {
    const base = createDataSource({ ...databaseConfigFromEnv(env), poolSize: 2, statementTimeoutMs: 2_000, lockTimeoutMs: 1_000, acquireTimeoutMs: 2_000 });
    const ds = new DataSource({ ...base.options, extra: { ...(base.options.extra as object), idleTimeoutMillis: 10_000, allowExitOnIdle: true } });
    await ds.initialize();
    return new TenantOutboundRepository(ds);
  };
  return new TenantOutboundCache(async (tenantId) => {
    opening ??= open().catch((err: unknown) => {
      opening = undefined; // try again on the next job
      throw err;
    });
    return (await opening).forDelivery(tenantId);
  });
}
