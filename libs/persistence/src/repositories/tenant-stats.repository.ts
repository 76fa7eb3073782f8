import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { TENANT_DUE_BACKLOG_SQL } from '../statements/tenant-due-backlog.sql';

export interface TenantDue {
  tenantId: number;
  /** due queued rows among those read */
  due: number;
  oldestDue: Date;
}

export interface DueBacklog {
  tenants: TenantDue[];
  /** rows read; when it reached the cap, counts are lower bounds */
  read: number;
  truncated: boolean;
}

/** Per-tenant figures for metrics: bounded reads, never a count over the whole table. */
@Injectable()
export class TenantStatsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Due queued rows per tenant among the oldest `maxRows` (statements/tenant-due-backlog.sql.ts). */
  async dueBacklog(now: Date, maxRows: number): Promise<DueBacklog> {
    const rows = await this.dataSource.transaction(async (m) => {
      // The bound holds only on the ordered index walk; see the statement.
      await m.query(`SET LOCAL enable_bitmapscan = off`);
      return (await sql<{ tenant_id: number; n: number; oldest: Date }>(m, TENANT_DUE_BACKLOG_SQL, [now, maxRows])).rows;
    });
    const tenants = rows.map((r) => ({ tenantId: r.tenant_id, due: r.n, oldestDue: r.oldest }));
    const read = tenants.reduce((sum, t) => sum + t.due, 0);
    return { tenants, read, truncated: read >= maxRows };
  }
}
