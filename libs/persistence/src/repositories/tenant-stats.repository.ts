import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { measureStoredBytes, type StoredBytesStep } from '../statements/measure-stored-bytes.sql';
import { TENANT_DUE_BACKLOG_SQL } from '../statements/tenant-due-backlog.sql';

export interface TenantDue {
  tenantId: number;
  /** due queued rows among those read */
  due: number;
  oldestDue: Date;
}

export interface TenantBytes {
  tenantId: number;
  storedBytes: number;
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

  /** One step of the stored-bytes pass (statements/measure-stored-bytes.sql.ts). */
  async measureStoredBytes(rowsPerStep: number): Promise<StoredBytesStep> {
    return measureStoredBytes(this.dataSource, rowsPerStep);
  }

  /** The `top` tenants by their last measured bytes, and what every other tenant holds together. */
  async storedBytes(top: number): Promise<{ top: TenantBytes[]; otherBytes: number }> {
    const { rows } = await sql<{ id: number | null; bytes: string }>(
      this.dataSource,
      `WITH ranked AS (SELECT id, stored_bytes, row_number() OVER (ORDER BY stored_bytes DESC, id) AS rank FROM tenants)
       SELECT id, stored_bytes::text AS bytes FROM ranked WHERE rank <= $1
       UNION ALL SELECT NULL, coalesce(sum(stored_bytes), 0)::text FROM ranked WHERE rank > $1`,
      [top],
    );
    return {
      top: rows.filter((r) => r.id !== null).map((r) => ({ tenantId: r.id as number, storedBytes: Number(r.bytes) })),
      otherBytes: Number(rows.find((r) => r.id === null)?.bytes ?? 0),
    };
  }
}
