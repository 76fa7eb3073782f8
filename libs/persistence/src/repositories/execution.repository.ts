import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Db, sql } from '../sql';

/**
 * The delivery hot path: the dispatcher claims due rows, workers load what they run and record
 * how it ended. Every method is one statement for a whole batch (arrays through `unnest`), so
 * the cost per job is a share of a round trip, not a round trip. Every state change is guarded
 * by the state *and* the attempt number it expects: a stale or duplicate delivery changes nothing.
 */

export interface ClaimRequest {
  id: string;
  /** The kind's handler timeout plus a margin for the wait in the pool queue. */
  leaseMs: number;
}

export interface ClaimedJob {
  id: string;
  tenantId: number;
  kind: string;
  /** The attempt this claim starts (attempts after the increment). */
  attempt: number;
  runAt: Date;
}

/** Why a hot-queue delivery was not claimed; `missing` = no such row. */
export type UnclaimedReason = 'cancelled' | 'finished' | 'running' | 'rescheduled' | 'not_due' | 'raced' | 'missing';

export interface UnclaimedJob {
  id: string;
  reason: UnclaimedReason;
  /** Present when the row is queued with a later run time (the delivery came early). */
  runAt?: Date;
}

export interface DeliveryRef {
  id: string;
  attempt: number;
}

export interface RunnableJob {
  id: string;
  tenantId: number;
  kind: string;
  key: string;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
  runAt: Date;
}

/** The job's next state after an attempt (state codes of job-state.codec). */
export type CompletionState = 'succeeded' | 'dead' | 'scheduled' | 'queued';

/** How one attempt ended (`job_attempts.outcome`); the subset of AttemptOutcome a worker writes. */
export type ExecutionOutcome = 'succeeded' | 'failed' | 'discarded' | 'released';

export interface CompletionRecord {
  id: string;
  attempt: number;
  tenantId: number;
  next: CompletionState;
  /** New run time for `scheduled`/`queued`; ignored otherwise. */
  runAt?: Date;
  /** Small JSON stored on the attempt and the job row (e.g. an HTTP status, also on failure). */
  result?: unknown;
  /** Already truncated by the caller. */
  error?: string | null;
  outcome: ExecutionOutcome;
  startedAt: Date;
  finishedAt: Date;
  workerId: string;
}

export interface ReleasedJob {
  id: string;
  tenantId: number;
  kind: string;
  runAt: Date;
}

const CODE: Record<CompletionState, string> = { succeeded: 'd', dead: 'x', scheduled: 's', queued: 'q' };

/** Error text stored for an attempt whose worker vanished (SIGKILL, OOM, lost node). */
export const LOST_ATTEMPT_ERROR = 'no outcome recorded: the worker stopped or lost its lease';

@Injectable()
export class ExecutionRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * queued → running for every due row among `items`, attempts + 1, lease = now + leaseMs.
   * Rows in any other state (or not yet due within `earlyMs`) are left alone: with several
   * dispatchers the update itself decides who owns a job. A re-claim (attempt > 1) whose
   * previous attempt left no history row (its worker died) gets a `lost` row for that attempt.
   *
   * The claim commits without waiting for the WAL flush (synchronous_commit off for this one
   * transaction; measured ~10 ms → ~1 ms per commit here). Safe: if a crash loses the claim,
   * the row is still queued, the worker finds no running row for that attempt and drops the
   * delivery, and the overdue sweep re-enqueues the row. A completion is always flushed, and
   * flushing it flushes every earlier claim with it, so no completion can outlive its claim.
   */
  async claimForDispatch(items: readonly ClaimRequest[], now: Date, earlyMs: number): Promise<ClaimedJob[]> {
    if (items.length === 0) return [];
    const { rows } = await sql<{ id: string; tenant_id: number; kind: string; attempts: number; run_at: Date }>(
      this.dataSource,
      `WITH claimed AS (
         UPDATE jobs j
            SET state = 'r', attempts = j.attempts + 1,
                lease_until = $2::timestamptz + t.lease_ms * interval '1 millisecond'
           FROM unnest($1::bigint[], $4::int[]) AS t(id, lease_ms),
                (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
          WHERE j.id = t.id AND j.state = 'q' AND j.run_at <= $3::timestamptz
         RETURNING j.id, j.tenant_id, j.kind, j.attempts, j.run_at
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts - 1, tenant_id, $2, $2, 'lost', $5 FROM claimed WHERE attempts > 1
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, attempts, run_at FROM claimed`,
      [
        items.map((i) => i.id),
        now,
        new Date(now.getTime() + earlyMs),
        items.map((i) => Math.max(0, Math.round(i.leaseMs))),
        LOST_ATTEMPT_ERROR,
      ],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, kind: r.kind, attempt: r.attempts, runAt: r.run_at }));
  }

  /** Why these ids were not claimed (read after a claim that returned fewer rows). */
  async explainUnclaimed(ids: readonly string[], now: Date, earlyMs: number): Promise<UnclaimedJob[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{ id: string; state: string | null; run_at: Date | null }>(
      this.dataSource,
      `SELECT t.id::text AS id, j.state, j.run_at
         FROM unnest($1::bigint[]) AS t(id) LEFT JOIN jobs j ON j.id = t.id`,
      [ids],
    );
    const due = now.getTime() + earlyMs;
    return rows.map((r): UnclaimedJob => {
      switch (r.state) {
        case null:
          return { id: r.id, reason: 'missing' };
        case 'c':
          return { id: r.id, reason: 'cancelled' };
        case 'd':
        case 'x':
          return { id: r.id, reason: 'finished' };
        case 'r':
          return { id: r.id, reason: 'running' };
        case 'q':
          // Queued with a later run time: rescheduled within the hot horizon, delivered early.
          return r.run_at && r.run_at.getTime() > due
            ? { id: r.id, reason: 'not_due', runAt: r.run_at }
            : { id: r.id, reason: 'raced' }; // changed between the claim and this read
        default:
          return { id: r.id, reason: 'rescheduled' }; // 's': moved back to the cold tier
      }
    });
  }

  /**
   * The rows a worker is about to run, only where the delivery is still current: state running
   * and attempts equal to the delivered attempt. Anything missing from the answer is stale.
   */
  async loadForExecution(refs: readonly DeliveryRef[]): Promise<RunnableJob[]> {
    if (refs.length === 0) return [];
    const { rows } = await sql<{
      id: string; tenant_id: number; kind: string; key: string; payload: unknown;
      attempts: number; max_attempts: number; run_at: Date;
    }>(
      this.dataSource,
      `SELECT j.id::text AS id, j.tenant_id, j.kind, j.key, j.payload, j.attempts, j.max_attempts, j.run_at
         FROM unnest($1::bigint[], $2::int2[]) AS t(id, attempt)
         JOIN jobs j ON j.id = t.id AND j.attempts = t.attempt
        WHERE j.state = 'r'`,
      [refs.map((r) => r.id), refs.map((r) => r.attempt)],
    );
    return rows.map((r) => ({
      id: r.id, tenantId: r.tenant_id, kind: r.kind, key: r.key, payload: r.payload ?? null,
      attempt: r.attempts, maxAttempts: r.max_attempts, runAt: r.run_at,
    }));
  }

  /**
   * Records how attempts ended: one guarded UPDATE of the jobs (running, same attempt) and one
   * INSERT of their history rows, only for the jobs the update matched. Returns the ids that
   * were applied; the rest were stale (rescued, released or finished by another delivery).
   * Pass the handler's transaction as `db` to commit its writes with the completion.
   */
  async complete(records: readonly CompletionRecord[], now: Date, db: Db = this.dataSource): Promise<Set<string>> {
    if (records.length === 0) return new Set();
    const { rows } = await sql<{ id: string }>(
      db,
      `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::int2[], $3::"char"[], $4::timestamptz[], $5::jsonb[], $6::text[],
                              $7::int[], $8::text[], $9::timestamptz[], $10::timestamptz[], $11::text[])
           AS t(id, attempt, state, run_at, result, error, tenant_id, outcome, started_at, finished_at, worker_id)
       ), done AS (
         UPDATE jobs j
            SET state = i.state,
                run_at = COALESCE(i.run_at, j.run_at),
                lease_until = NULL,
                finished_at = CASE WHEN i.state IN ('d', 'x') THEN $12::timestamptz END,
                result = i.result,
                last_error = i.error
           FROM input i
          WHERE j.id = i.id AND j.state = 'r' AND j.attempts = i.attempt
         RETURNING j.id
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error, result)
         SELECT i.id, i.attempt, i.tenant_id, i.started_at, i.finished_at, i.outcome, i.worker_id, i.error, i.result
           FROM input i JOIN done d ON d.id = i.id
         ON CONFLICT (job_id, attempt) DO UPDATE
            SET started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at, outcome = EXCLUDED.outcome,
                worker_id = EXCLUDED.worker_id, error = EXCLUDED.error, result = EXCLUDED.result
       )
       SELECT id::text AS id FROM done`,
      [
        records.map((r) => r.id),
        records.map((r) => r.attempt),
        records.map((r) => CODE[r.next]),
        records.map((r) => (r.next === 'scheduled' || r.next === 'queued' ? (r.runAt ?? null) : null)),
        records.map((r) => (r.result === undefined ? null : JSON.stringify(r.result))),
        records.map((r) => r.error ?? null),
        records.map((r) => r.tenantId),
        records.map((r) => r.outcome),
        records.map((r) => r.startedAt),
        records.map((r) => r.finishedAt),
        records.map((r) => r.workerId),
        now,
      ],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * running → queued for deliveries a worker gives back unfinished (graceful shutdown), with a
   * `released` history row. The attempt still counts: the handler did start. Guarded like
   * `complete`; returns what was released so the caller re-enqueues it at once.
   */
  async release(refs: readonly DeliveryRef[], now: Date, workerId: string, startedAt: Date[] = []): Promise<ReleasedJob[]> {
    if (refs.length === 0) return [];
    const { rows } = await sql<{ id: string; tenant_id: number; kind: string; run_at: Date }>(
      this.dataSource,
      `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::int2[], $5::timestamptz[]) AS t(id, attempt, started_at)
       ), released AS (
         UPDATE jobs j SET state = 'q', lease_until = NULL
           FROM input i
          WHERE j.id = i.id AND j.state = 'r' AND j.attempts = i.attempt
         RETURNING j.id, j.tenant_id, j.kind, j.run_at, j.attempts
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error)
         SELECT r.id, r.attempts, r.tenant_id, COALESCE(i.started_at, $3), $3, 'released', $4,
                'worker shut down before the handler finished'
           FROM released r JOIN input i ON i.id = r.id
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, run_at FROM released`,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), now, workerId, refs.map((_, i) => startedAt[i] ?? null)],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, kind: r.kind, runAt: r.run_at }));
  }
}
