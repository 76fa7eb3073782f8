import { type Db, type TenantRecord, TenantOverviewRepository } from '@almanac/persistence';
import { Injectable } from '@nestjs/common';
import type { OverviewData } from './views/overview.view';

const HOUR_MS = 3600_000;
/** The state counts' and dead list's window. */
const WINDOW_HOURS = 24;
const SPARK_MINUTES = 60;
/**
 * Rows any one overview read may visit: a backward walk of jobs_tenant_list with a heap visit
 * per row, about 1.5 µs a row (tenant-due-backlog.sql.ts's measurement of the same kind of
 * walk), so ~75 ms at the cap; past it the page says "the newest 50,000 read".
 */
const ROW_CAP = 50_000;
const DUE_CAP = 100_000;
const DEAD_SHOWN = 10;
/** What the overview spends of the tenant's request budget (ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND): its five reads. */
export const OVERVIEW_READ_COST = 5;

/**
 * The overview page's figures: five bounded reads of the tenant's own rows, one after the other
 * on one pooled connection (a tenant reloading its overview cannot hold several), closed once the
 * request is over (`over`): a reload at the tenant's budget would else leave its reads running
 * after their 503s, holding the pool other tenants need.
 */
@Injectable()
export class ConsoleOverviewService {
  constructor(private readonly overview: TenantOverviewRepository) {}

  read(tenant: TenantRecord, now: Date, over?: AbortSignal): Promise<OverviewData> {
    return this.overview.together(over, (db) => this.readOn(db, tenant, now));
  }

  private async readOn(db: Db, tenant: TenantRecord, now: Date): Promise<OverviewData> {
    const since = new Date(now.getTime() - WINDOW_HOURS * HOUR_MS);
    const states = await this.overview.stateCounts(tenant.id, since, now, ROW_CAP, db);
    const dueHour = await this.overview.dueSoon(tenant.id, now, new Date(now.getTime() + HOUR_MS), DUE_CAP, db);
    const dueDay = await this.overview.dueSoon(tenant.id, now, new Date(now.getTime() + WINDOW_HOURS * HOUR_MS), DUE_CAP, db);
    const recent = await this.overview.recentExecutions(tenant.id, new Date(now.getTime() - SPARK_MINUTES * 60_000), now, ROW_CAP, db);
    // The state counts walked the same rows: no dead job among them, no second walk.
    const dead = (states.counts.dead ?? 0) > 0 ? await this.overview.recentDead(tenant.id, since, now, ROW_CAP, DEAD_SHOWN, db) : [];
    return {
      now,
      windowHours: WINDOW_HOURS,
      states,
      dueHour,
      dueDay,
      recent,
      spanMinutes: SPARK_MINUTES,
      dead: dead.map((d) => ({ ...d, runAt: d.runAt.toISOString(), state: 'dead' })),
    };
  }
}
