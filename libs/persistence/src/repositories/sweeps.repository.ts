import type { Hint, JobState } from '@almanac/domain';
import { DataSource, EntityManager } from 'typeorm';
import { decodeState } from '../job-state.codec';
import { plainArray } from '../plain-array';
import { sql } from '../sql';
import { COLD_CLAIM_SQL, COLD_DUE_SQL } from '../statements/cold-claim.sql';
import { COUNT_IN_FLIGHT_SQL, IN_FLIGHT_EXACT_UP_TO } from '../statements/count-in-flight.sql';
import { COUNT_JOB_STATES_SQL } from '../statements/count-job-states.sql';
import { databaseNow } from '../statements/database-now.sql';
import { demoteToScheduled } from '../statements/demote-to-scheduled.sql';
import { DUE_COLD_TENANTS_SQL } from '../statements/due-cold-tenants.sql';
import { JOB_STATE_STATS_SQL } from '../statements/job-state-stats.sql';
import { PROMOTE_COLD_SQL } from '../statements/promote-cold.sql';
import { PROMOTE_COLD_FAIR_SQL } from '../statements/promote-cold-fair.sql';
import { PROMOTE_IDS_SQL } from '../statements/promote-ids.sql';
import { RESCUE_RUNNING_SQL } from '../statements/rescue-running.sql';
import { SET_ASIDE_JOB_SQL } from '../statements/set-aside-job.sql';
import { newLeaseHolder, SWEEP_LEASE_TTL_MS, type SweepLeaseName, withSweepLease } from './sweep-lease';

/**
 * See promoteFairShare. SET LOCAL: gone at commit even if the statement fails. jit off: these
 * costs put the plan over jit_above_cost, and compiling would cost more than the batch.
 */
const FAIR_PLANNER_COSTS = `SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off; SET LOCAL jit = off;
  SET LOCAL cpu_tuple_cost = 1; SET LOCAL cpu_index_tuple_cost = 1; SET LOCAL random_page_cost = 1`;
const USUAL_PLANNER_COSTS = `SET LOCAL enable_bitmapscan TO DEFAULT; SET LOCAL enable_seqscan TO DEFAULT; SET LOCAL jit TO DEFAULT;
  SET LOCAL cpu_tuple_cost TO DEFAULT; SET LOCAL cpu_index_tuple_cost TO DEFAULT; SET LOCAL random_page_cost TO DEFAULT`;

/** What the hot queue needs to know about a row (never the payload): a hint. */
export type SweepJobRef = Hint;

export interface RunningRescue {
  /** Back to queued: the caller enqueues them. */
  requeued: SweepJobRef[];
  /** Attempts exhausted while the lease ran out: now dead. */
  dead: number;
}

export type JobStateCounts = Record<JobState, number>;

/** Where a scan of queued rows stopped: the last (run_at, id) it saw. */
export interface QueuedCursor {
  runAt: Date;
  id: string;
}

interface JobRefRow {
  id: string;
  run_at: Date;
  tenant_id: number;
  kind: string;
}

function toRef(r: JobRefRow): SweepJobRef {
  return { id: r.id, dueMs: r.run_at.getTime(), tenantId: r.tenant_id, kind: r.kind };
}

/**
 * SQL the promoter's sweeps need beyond JobsRepository. Every statement is one round trip over
 * a partial index whose size is the work to do, not the table: jobs_cold_due (state 's'),
 * jobs_queued_due (state 'q'), jobs_running_lease (state 'r'), schedules_due (not paused).
 */
export class SweepsRepository {
  /**
   * @param leaseHolder this repository's name on sweep leases: each instance is its own holder
   * (a promoter makes one per process), made once so renewals and the release match it.
   */
  constructor(
    private readonly db: DataSource,
    readonly leaseHolder = newLeaseHolder(),
  ) {}

  /** Tenants with cold rows in an hour bucket ≤ hour(horizon), for promoteColdBatch (DUE_COLD_TENANTS_SQL). */
  async dueColdTenants(horizon: Date): Promise<number[]> {
    const { rows } = await sql<{ tenant_id: number }>(this.db, DUE_COLD_TENANTS_SQL, [horizon]);
    return rows.map((r) => r.tenant_id);
  }

  /**
   * Claims up to `limit` cold rows whose UTC hour bucket is ≤ hour(horizon) and marks them
   * queued, in one short transaction that commits before the caller publishes them: no row lock
   * is held while the caller waits on Redis. The earliest due hour is shared between `tenants`
   * (PROMOTE_COLD_FAIR_SQL); the rest of the batch is filled in hour order (PROMOTE_COLD_SQL), so
   * a batch comes back short only when no unlocked due row is left.
   */
  async promoteColdBatch(horizon: Date, limit: number, tenants: readonly number[] = []): Promise<SweepJobRef[]> {
    return this.db.transaction(async (m) => {
      // A commit lost in a Postgres crash leaves the rows scheduled while Redis may have their
      // hints: a worker's claim drops such hints (the row is not queued) and the next promotion
      // re-adds the same ids. So no WAL flush wait.
      await m.query(`SET LOCAL synchronous_commit = off`);
      const fair = tenants.length > 0 ? await this.promoteFairShare(m, horizon, limit, tenants) : [];
      if (fair.length >= limit) return fair.map(toRef);
      if (tenants.length > 0) await m.query(USUAL_PLANNER_COSTS); // the fill is planned as it always was
      const { rows } = await sql<JobRefRow>(m, PROMOTE_COLD_SQL, [horizon, limit - fair.length]);
      return [...fair, ...rows].map(toRef);
    });
  }

  private async promoteFairShare(m: EntityManager, horizon: Date, limit: number, tenants: readonly number[]): Promise<JobRefRow[]> {
    // Planner costs that count tuples, for this statement: with the heap in hour order the
    // default costs pick "scan jobs_cold_due's bucket, filter the tenant" (every row of a big
    // hour, per tenant per batch; the plan test's 100k-row hour) or a bitmap of the tenant's whole
    // bucket. Counted in tuples, jobs_cold_tenant's (tenant, hour) range is always fewer.
    await m.query(FAIR_PLANNER_COSTS);
    const { rows } = await sql<JobRefRow>(m, PROMOTE_COLD_FAIR_SQL, [horizon, limit, tenants]);
    return rows;
  }

  /**
   * The cold rows a batch of `limit` would promote, without promoting or locking them, with their
   * tenant: for PromotionSweep to split a batch that failed on a value (promoteIds).
   */
  async coldCandidates(horizon: Date, limit: number): Promise<{ id: string; tenantId: number }[]> {
    const { rows } = await sql<{ id: string; tenant_id: number }>(this.db, COLD_DUE_SQL, [horizon, limit]);
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id }));
  }

  /** Promotes these cold rows (PROMOTE_IDS_SQL); those no longer cold are left out. */
  async promoteIds(ids: readonly string[]): Promise<SweepJobRef[]> {
    const { rows } = await sql<JobRefRow>(this.db, PROMOTE_IDS_SQL, [plainArray(ids)]);
    return rows.map(toRef);
  }

  /** Sets aside a cold or queued row a shared statement cannot move (SET_ASIDE_JOB_SQL). */
  async setAside(id: string, reason: string, now: Date): Promise<void> {
    await sql(this.db, SET_ASIDE_JOB_SQL, [id, reason, now]);
  }

  /** Promoted rows whose publish failed go back to scheduled (see demoteToScheduled). */
  demoteToScheduled(items: readonly { id: string; runAt: Date }[]): Promise<number> {
    return demoteToScheduled(this.db, items);
  }

  /** The fair share's plan under the costs it runs with, for tests that pin the index choice. */
  async explainFairClaim(horizon: Date, limit: number, tenants: readonly number[]): Promise<string> {
    return this.db.transaction(async (m) => {
      await m.query(FAIR_PLANNER_COSTS);
      const { rows } = await sql<{ 'QUERY PLAN': string }>(m, `EXPLAIN ${PROMOTE_COLD_FAIR_SQL}`, [horizon, limit, tenants]);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  }

  /** The claim query's plan, for tests that pin the index choice. */
  async explainColdClaim(horizon: Date, limit: number): Promise<string> {
    const { rows } = await sql<{ 'QUERY PLAN': string }>(this.db, `EXPLAIN ${COLD_CLAIM_SQL}`, [horizon, limit]);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  }

  /** The database's clock now (DATABASE_NOW_SQL), in ms. */
  async databaseNowMs(): Promise<number> {
    return (await databaseNow(this.db)).getTime();
  }

  /**
   * Walks queued rows (all of them, or those due before `dueBefore`) in
   * (run_at, id) order, `batch` rows per statement, at most `max`, starting after `from`. Each
   * page is its own short statement and `each` runs between them, so no snapshot or
   * transaction is held while the caller waits on Redis, and vacuum is never held back for the
   * whole scan. Returns where it stopped: `next` is the last row seen, or null once the end was
   * reached, so a caller that keeps `next` across runs continues a large scan instead of
   * starting over from the oldest row every time. Once `stop` is aborted (its caller lost its
   * sweep lease) no further page is read, and `next` is where it stopped.
   */
  async scanQueued(
    dueBefore: Date | null,
    batch: number,
    max: number,
    each: (rows: SweepJobRef[]) => Promise<void>,
    from: QueuedCursor | null = null,
    stop?: AbortSignal,
  ): Promise<{ seen: number; next: QueuedCursor | null }> {
    let seen = 0;
    let after = from;
    while (seen < max && !stop?.aborted) {
      const n = Math.min(batch, max - seen);
      const rows = await this.pageQueued(dueBefore, after, n);
      if (rows.length > 0) await each(rows);
      seen += rows.length;
      if (rows.length < n) return { seen, next: null };
      const last = rows[rows.length - 1];
      after = { runAt: new Date(last.dueMs), id: last.id };
    }
    return { seen, next: after };
  }

  private async pageQueued(dueBefore: Date | null, after: QueuedCursor | null, limit: number): Promise<SweepJobRef[]> {
    const { rows } = await sql<JobRefRow>(this.db, ...queuedPage(dueBefore, after, limit));
    return rows.map(toRef);
  }

  /**
   * Running rows whose worker is gone (one of `deadWorkers`, or their lease ran out before
   * `now`): back to queued, or dead when that attempt was the last, each with a `lost` history
   * row. One statement, SKIP LOCKED across replicas.
   */
  async rescueRunning(now: Date, limit: number, lostError: string, deadWorkers: readonly number[] = []): Promise<RunningRescue> {
    const { rows } = await sql<JobRefRow & { state: string }>(this.db, RESCUE_RUNNING_SQL, [now, limit, lostError, deadWorkers]);
    const requeued = rows.filter((r) => r.state === 'q').map(toRef);
    return { requeued, dead: rows.length - requeued.length };
  }


  /**
   * Rows per state, cheaply: the planner's row estimate (pg_class.reltuples, kept fresh by
   * autovacuum/ANALYZE) split by the state column's most-common-value frequencies in pg_stats;
   * queued and running counted over their partial indexes instead, up to `exactUpTo` each (past
   * it, the estimate, at least `exactUpTo`). A table never analysed is small: count exactly.
   */
  async estimateJobStates(exactUpTo = IN_FLIGHT_EXACT_UP_TO): Promise<JobStateCounts> {
    const counts: JobStateCounts = { scheduled: 0, queued: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0 };
    const { rows: [stats] } = await sql<{ total: number; vals: string[] | null; freqs: number[] | null }>(this.db, JOB_STATE_STATS_SQL);
    if (!stats || stats.total < 0 || !stats.vals || !stats.freqs) {
      const { rows } = await sql<{ state: string; n: number }>(this.db, COUNT_JOB_STATES_SQL);
      for (const r of rows) counts[decodeState(r.state)] = r.n;
      return counts;
    }
    stats.vals.forEach((code, i) => {
      counts[decodeState(code)] = Math.round(stats.total * (stats.freqs?.[i] ?? 0));
    });
    const { rows: [counted] } = await sql<{ q: number; r: number }>(this.db, COUNT_IN_FLIGHT_SQL, [exactUpTo]);
    for (const [state, n] of [['queued', counted.q], ['running', counted.r]] as const) counts[state] = n < exactUpTo ? n : Math.max(n, counts[state]);
    return counts;
  }

  /** Runs `fn` under the named sweep's lease, held as `leaseHolder`; `null` when another has it (withSweepLease). */
  withSweepLease<T>(name: SweepLeaseName, fn: (lost: AbortSignal) => Promise<T>, ttlMs = SWEEP_LEASE_TTL_MS): Promise<T | null> {
    return withSweepLease(this.db, name, this.leaseHolder, fn, ttlMs);
  }
}

/**
 * One page of queued rows due before `dueBefore`, after `after`, in (run_at, id) order: a range
 * of jobs_queued_due (run_at, id), so a page reads about its own rows however many share a run
 * time (on run_at alone each page read and sorted all of them: a 1 M-row burst cost every pass
 * minutes). Separate query texts rather than `$1 IS NULL OR …`, so the planner sees a plain range.
 */
export function queuedPage(dueBefore: Date | null, after: QueuedCursor | null, limit: number): [string, unknown[]] {
  const conditions = [`state = 'q'`];
  const params: unknown[] = [limit];
  if (dueBefore) conditions.push(`run_at < $${params.push(dueBefore)}`);
  if (after) conditions.push(`(run_at, id) > ($${params.push(after.runAt)}::timestamptz, $${params.push(after.id)}::bigint)`);
  // jobs.id, not the text column named id: ordered as text, a page ending on a longer id skipped
  // the shorter ids of its run time (ids gain a digit, as on 2026-10-10).
  return [`SELECT id::text AS id, run_at, tenant_id, kind FROM jobs WHERE ${conditions.join(' AND ')} ORDER BY jobs.run_at, jobs.id LIMIT $1`, params];
}
