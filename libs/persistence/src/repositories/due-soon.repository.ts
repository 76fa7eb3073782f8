import type { DueMinute } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { DUE_SOON_BY_POOL_SQL } from '../statements/due-soon-by-pool.sql';

export interface DueSoonScan {
  minutes: DueMinute[];
  /** a state's rows reached the cap: the counts are lower bounds */
  truncated: boolean;
}

/** What comes due soon, per pool: the promoter's look-ahead for autoscaling (issue 19). */
@Injectable()
export class DueSoonRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Unfinished jobs due in [now, until) per pool and minute, each state read up to `cap` rows. */
  async byPoolAndMinute(now: Date, until: Date, cap: number): Promise<DueSoonScan> {
    const rows = await this.dataSource.transaction(async (m) => {
      // The bound holds only on an index walk: a bitmap scan reads every row in range and
      // ignores the LIMIT (as TenantStatsRepository found for the due backlog).
      await m.query(`SET LOCAL enable_bitmapscan = off`);
      return (await sql<{ state: string; pool: string; minute: number; n: number }>(m, DUE_SOON_BY_POOL_SQL, [now, until, cap])).rows;
    });
    const perState = new Map<string, number>();
    for (const r of rows) perState.set(r.state, (perState.get(r.state) ?? 0) + r.n);
    return {
      minutes: rows.map((r) => ({ pool: r.pool, minute: r.minute, n: r.n })),
      truncated: [...perState.values()].some((n) => n >= cap),
    };
  }
}
