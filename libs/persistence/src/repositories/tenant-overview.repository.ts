import type { JobState } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { decodeState } from '../job-state.codec';
import { type Db, onConnection, sql } from '../sql';
import { CONSOLE_STATE_COUNTS_SQL } from '../statements/console-state-counts.sql';
import { DUE_SOON_COUNTS_SQL } from '../statements/due-soon-counts.sql';
import { RECENT_DEAD_JOBS_SQL } from '../statements/recent-dead-jobs.sql';
import { RECENT_ATTEMPTS_PER_JOB, RECENT_EXECUTIONS_SQL } from '../statements/recent-executions.sql';

/** A count read up to a cap: `capped` says the true figure may be higher. */
export interface BoundedCount {
  n: number;
  capped: boolean;
}

export interface StateCounts {
  counts: Partial<Record<JobState, number>>;
  /** rows read; equal to the cap when more rows were in the window */
  read: number;
  capped: boolean;
}

export interface RecentExecutions {
  /** one entry per minute that had executions, oldest first */
  minutes: MinuteFigures[];
  /** jobs read; when it reached the cap, older jobs in the window were not */
  read: number;
  /** the most attempts read per job, newest first */
  attemptsPerJob: number;
  /** older jobs in the window were not read, or a job's older attempts in it were not */
  capped: boolean;
}

export interface DeadJobRow {
  id: string;
  key: string;
  kind: string;
  runAt: Date;
  attempts: number;
  maxAttempts: number;
}

export interface MinuteFigures {
  minute: Date;
  executions: number;
  /** first attempts' start − run_at, null in a minute with only retries */
  lagP50Ms: number | null;
  lagP95Ms: number | null;
}

/**
 * One tenant's figures for the console's overview. Every read is bounded by a row cap, not by
 * the table: an overview of a 10 M-row table costs what an overview of a small one does.
 */
@Injectable()
export class TenantOverviewRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * `work`'s reads on one pooled connection (pass them the Db it is given), the connection
   * closed once `over` aborts (onConnection): an overview's reads stop with its request.
   */
  together<T>(over: AbortSignal | undefined, work: (db: Db) => Promise<T>): Promise<T> {
    return onConnection(this.dataSource, over, (c) => work(c.manager));
  }

  /** Jobs due in [from, to) by state (cold rows excluded), from the newest `cap`. */
  async stateCounts(tenantId: number, from: Date, to: Date, cap: number, db: Db = this.dataSource): Promise<StateCounts> {
    const { rows } = await sql<{ state: string; n: number }>(db, CONSOLE_STATE_COUNTS_SQL, [tenantId, from, to, cap]);
    const counts: Partial<Record<JobState, number>> = {};
    let read = 0;
    for (const r of rows) {
      counts[decodeState(r.state)] = r.n;
      read += r.n;
    }
    return { counts, read, capped: read >= cap };
  }

  /** Unfinished jobs due in [from, to): cold and queued rows, each counted up to `cap`. */
  async dueSoon(tenantId: number, from: Date, to: Date, cap: number, db: Db = this.dataSource): Promise<BoundedCount> {
    const { rows } = await sql<{ cold: number; queued: number; read: number }>(db, DUE_SOON_COUNTS_SQL, [tenantId, from, to, cap]);
    const { cold, queued, read } = rows[0];
    return { n: cold + queued, capped: cold >= cap || read >= cap };
  }

  /** The newest dead jobs due in [from, to), among the newest `walk` non-cold rows there. */
  async recentDead(tenantId: number, from: Date, to: Date, walk: number, limit: number, db: Db = this.dataSource): Promise<DeadJobRow[]> {
    const { rows } = await sql<{ id: string; key: string; kind: string; run_at: Date; attempts: number; max_attempts: number }>(
      db,
      RECENT_DEAD_JOBS_SQL,
      [tenantId, from, to, walk, limit],
    );
    return rows.map((r) => ({ id: r.id, key: r.key, kind: r.kind, runAt: r.run_at, attempts: r.attempts, maxAttempts: r.max_attempts }));
  }

  /**
   * Executions and start lag per minute for jobs due in [from, to) (the newest `cap`), each
   * job's newest RECENT_ATTEMPTS_PER_JOB attempts.
   */
  async recentExecutions(tenantId: number, from: Date, to: Date, cap: number, db: Db = this.dataSource): Promise<RecentExecutions> {
    const { rows } = await sql<{ minute: Date; executions: number; lag_p50_ms: number | null; lag_p95_ms: number | null; jobs_read: number; attempts_cut: boolean }>(
      db,
      RECENT_EXECUTIONS_SQL,
      [tenantId, from, to, cap],
    );
    return {
      minutes: rows.filter((r) => r.executions > 0).map((r) => ({ minute: r.minute, executions: r.executions, lagP50Ms: r.lag_p50_ms, lagP95Ms: r.lag_p95_ms })),
      read: rows[0]?.jobs_read ?? 0,
      attemptsPerJob: RECENT_ATTEMPTS_PER_JOB,
      capped: (rows[0]?.jobs_read ?? 0) >= cap || rows.some((r) => r.attempts_cut),
    };
  }
}
