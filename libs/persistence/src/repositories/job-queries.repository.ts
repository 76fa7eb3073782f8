import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { onConnection } from '../sql';
import { FIND_JOB_BY_KEY_SQL } from '../statements/find-job-by-key.sql';
import { listScheduled } from './cold-job-list';
import { type JobListFilter, type JobListPage, listNonScheduled, type ListPosition, mergePages } from './job-list';
import { findViewForTenant, inSnapshot, JobView, RawJob, Runner, toView } from './job-view';

export type { JobView } from './job-view';
export { type JobListFilter, type JobListPage, type ListPosition, mergePages } from './job-list';

/**
 * Tenant-scoped reads on jobs (API-driven state changes live in JobChangesRepository): one by id
 * or key, and the keyset-paginated list (job-list.ts). Each stops when its caller does (`over`).
 */
@Injectable()
export class JobQueriesRepository {
  constructor(private readonly db: DataSource) {}

  async findForTenant(tenantId: number, id: string, over?: AbortSignal): Promise<JobView | null> {
    return onConnection(this.db, over, (c) => findViewForTenant(c, tenantId, id));
  }

  async findByKeyForTenant(tenantId: number, key: string, over?: AbortSignal): Promise<JobView | null> {
    const rows = await onConnection(this.db, over, (c): Promise<RawJob[]> => c.query(FIND_JOB_BY_KEY_SQL, [tenantId, key]));
    return rows[0] ? toView(rows[0]) : null;
  }

  async list(tenantId: number, filter: JobListFilter, after: ListPosition | null, limit: number, over?: AbortSignal): Promise<JobListPage> {
    return onConnection(this.db, over, (c) => {
      if (filter.state === 'scheduled') return listScheduled(c, tenantId, filter, after, limit);
      if (filter.state) return listNonScheduled(c, tenantId, filter, after, limit);
      // Both halves in one snapshot: read apart, a row turning from scheduled to queued between
      // them was listed twice or not at all.
      return inSnapshot(c, async (tx) => {
        const hot = await listNonScheduled(tx, tenantId, filter, after, limit);
        return mergePages(hot, await listScheduled(tx, tenantId, filter, after, limit), limit);
      });
    });
  }

  /** EXPLAIN of every statement a list call would run (tests assert index use). */
  async explainList(tenantId: number, filter: JobListFilter, after: ListPosition | null, limit: number): Promise<string[]> {
    const plans: string[] = [];
    const explaining: Runner = {
      query: async (sql: string, params?: unknown[]) => {
        const rows: { 'QUERY PLAN': string }[] = await this.db.query(`EXPLAIN ${sql}`, params);
        plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
        return this.db.query(sql, params);
      },
    };
    if (filter.state !== 'scheduled') await listNonScheduled(explaining, tenantId, filter, after, limit);
    if (!filter.state || filter.state === 'scheduled') await listScheduled(explaining, tenantId, filter, after, limit);
    return plans;
  }

}
