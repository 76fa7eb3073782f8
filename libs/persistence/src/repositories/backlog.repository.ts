import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { COUNT_BACKLOG_SQL } from '../statements/count-backlog.sql';
import { PARK_BACKLOG_SQL } from '../statements/park-backlog.sql';
import { TAKE_BACKLOG_SQL } from '../statements/take-backlog.sql';

export interface BacklogItem {
  id: string;
  pool: string;
  runAt: Date;
}

/**
 * The dispatch backlog (table dispatch_backlog): due jobs waiting for a pool to have room. Rows
 * here are references; the job row stays `queued`, so a cancel still works and a worker's claim
 * still decides. Each method is one statement for the whole batch.
 */
@Injectable()
export class BacklogRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Parks jobs; a job already parked stays as it was (a second hot copy of the same row). */
  async park(items: readonly BacklogItem[]): Promise<void> {
    if (items.length === 0) return;
    await sql(this.dataSource, PARK_BACKLOG_SQL, [items.map((i) => i.id), items.map((i) => i.runAt), items.map((i) => i.pool)]);
  }

  /**
   * Takes up to `limit` of a pool's parked jobs, oldest run time first. SKIP LOCKED: two
   * dispatchers refilling the same pool take disjoint sets.
   */
  async take(pool: string, limit: number): Promise<BacklogItem[]> {
    if (limit <= 0) return [];
    const { rows } = await sql<{ id: string; run_at: Date }>(this.dataSource, TAKE_BACKLOG_SQL, [pool, limit]);
    return rows.sort((a, b) => a.run_at.getTime() - b.run_at.getTime()).map((r) => ({ id: r.id, pool, runAt: r.run_at }));
  }

  /** Parked jobs per pool (the backlog gauge; also how a dispatcher learns of another's parking). */
  async counts(): Promise<Map<string, number>> {
    const { rows } = await sql<{ pool: string; n: number }>(this.dataSource, COUNT_BACKLOG_SQL);
    return new Map(rows.map((r) => [r.pool, r.n]));
  }
}
