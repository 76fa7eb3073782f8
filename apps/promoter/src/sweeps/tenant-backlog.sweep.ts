import type { TenantDue, TenantStatsRepository } from '@almanac/persistence';
import { OTHER_TENANT, TOP_TENANTS_REFRESH_MS } from '@almanac/platform';
import type { SweepMetrics } from './sweep-metrics';
import type { Sweep, SweepResult } from './sweep';

export interface TenantBacklogRow {
  /** the tenant id as a string, or "other" */
  tenant: string;
  backlog: number;
  oldestDueSeconds: number;
}

export interface TenantBacklogResult extends SweepResult {
  /** the top N, largest backlog first, then `other` */
  rows: TenantBacklogRow[];
  /** the scan stopped at its cap: counts are lower bounds */
  truncated: boolean;
}

/** As often as Prometheus scrapes; workers re-read the top N as often (one value, in @almanac/delivery). */
export const TENANT_BACKLOG_INTERVAL_MS = TOP_TENANTS_REFRESH_MS;

export interface TenantBacklogOptions {
  top: number;
  scanRows: number;
}

/**
 * Per-tenant backlog without a label per tenant: due queued jobs counted per tenant (a bounded
 * scan, statements/tenant-due-backlog.sql.ts), exported for the top N by count, the rest summed
 * (count) or maxed (age) as `other`; then the top N is published for the workers' lag labels
 * (TenantLabels). Every replica may run it; it only reads Postgres.
 */
export class TenantBacklogSweep implements Sweep<TenantBacklogResult> {
  readonly name = 'tenant_backlog' as const;

  constructor(
    private readonly repo: TenantStatsRepository,
    private readonly publish: (tenantIds: number[]) => Promise<void>,
    private readonly o: TenantBacklogOptions,
    private readonly metrics?: SweepMetrics,
  ) {}

  async runOnce(now: Date): Promise<TenantBacklogResult> {
    const scan = await this.repo.dueBacklog(now, this.o.scanRows);
    const { top, rows } = rankTenants(scan.tenants, this.o.top, now);
    this.metrics?.setTenantBacklog(rows);
    await this.publish(top);
    return { rows, truncated: scan.truncated };
  }
}

/** The top `n` tenants by backlog (ties: the older oldest job first, then the lower id), and `other`. */
export function rankTenants(tenants: readonly TenantDue[], n: number, now: Date): { top: number[]; rows: TenantBacklogRow[] } {
  const age = (t: TenantDue) => Math.max(0, now.getTime() - t.oldestDue.getTime()) / 1000;
  const ranked = [...tenants].sort((a, b) => b.due - a.due || a.oldestDue.getTime() - b.oldestDue.getTime() || a.tenantId - b.tenantId);
  const top = ranked.slice(0, n);
  const rest = ranked.slice(n);
  const rows = top.map((t) => ({ tenant: String(t.tenantId), backlog: t.due, oldestDueSeconds: age(t) }));
  rows.push({
    tenant: OTHER_TENANT,
    backlog: rest.reduce((sum, t) => sum + t.due, 0),
    oldestDueSeconds: rest.reduce((max, t) => Math.max(max, age(t)), 0),
  });
  return { top: top.map((t) => t.tenantId), rows };
}
