import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { STATE_CODE } from '../job-state.codec';
import { Db, sql } from '../sql';

/**
 * The delivery hot path: a worker claims the rows it is about to run and records how each
 * attempt ended. Every method is one statement for a whole batch (arrays through `unnest`), so
 * the cost per job is a share of a round trip, not a round trip. Every state change is guarded
 * by the state (and, after the claim, the attempt number) it expects: a stale or duplicate
 * delivery changes nothing.
 */

/** Why a delivery was not claimed; `missing` = no such row. */
export type UnclaimedReason = 'cancelled' | 'finished' | 'running' | 'rescheduled' | 'not_due' | 'raced' | 'missing';

export interface UnclaimedJob {
  id: string;
  reason: UnclaimedReason;
  /** Present when the row is queued with a later run time (the delivery came early). */
  runAt?: Date;
  tenantId?: number;
  kind?: string;
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
  /** The attempt this run is (attempts once it is counted). */
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  /**
   * False for a row claimed ahead of its run time: the attempt is counted only by startClaimed,
   * as its handler starts, so a worker that dies in between uses up no attempt.
   */
  counted: boolean;
  /** The lease the claim set: startClaimed's proof that the row is still this claim's. */
  leaseUntil: Date;
}

/** A row claimed ahead of its run time, about to start (see RunnableJob.counted). */
export interface ClaimedAhead {
  id: string;
  attempt: number;
  leaseUntil: Date;
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


/** Error text stored for an attempt whose worker vanished (SIGKILL, OOM, lost node). */
export const LOST_ATTEMPT_ERROR = 'no outcome recorded: the worker stopped or lost its lease';

@Injectable()
export class ExecutionRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * queued → running for every due row among `ids`, lease = now + leaseMs, and the rows to run:
   * the claim a worker makes as its handlers start. Rows in any other state (or not due within
   * `earlyMs`) are left alone: with several deliveries of one row, the update decides which one
   * runs it. A row already due has its attempt counted here (attempts + 1); a row claimed
   * ahead of its run time (the claim lead) is counted by startClaimed as its handler starts, so
   * an attempt is only ever used by a real run. A counted re-claim (attempt > 1) whose previous
   * attempt left no history row (its worker died) gets a `lost` row for it.
   *
   * The claim commits without waiting for the WAL flush (synchronous_commit off for this one
   * transaction; measured ~10 ms → ~1 ms per commit here). Safe: if a crash loses the claim, the
   * row is still queued and is delivered again, as after a worker crash mid-handler. A completion
   * is always flushed, and flushing it flushes every earlier claim, so no completion outlives
   * its claim.
   */
  async claimForRun(ids: readonly string[], now: Date, earlyMs: number, leaseMs: number): Promise<RunnableJob[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{
      id: string; tenant_id: number; kind: string; key: string; payload: unknown;
      attempts: number; max_attempts: number; run_at: Date; counted: boolean; lease_until: Date;
    }>(
      this.dataSource,
      `WITH claimed AS (
         UPDATE jobs j
            SET state = 'r', attempts = j.attempts + (j.run_at <= $2::timestamptz)::int,
                lease_until = $2::timestamptz + $4 * interval '1 millisecond'
           FROM unnest($1::bigint[]) AS t(id),
                (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
          WHERE j.id = t.id AND j.state = 'q' AND j.run_at <= $3::timestamptz
         RETURNING j.id, j.tenant_id, j.kind, j.key, j.payload, j.attempts, j.max_attempts, j.run_at, j.lease_until,
                   j.run_at <= $2::timestamptz AS counted
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts - 1, tenant_id, $2, $2, 'lost', $5 FROM claimed WHERE counted AND attempts > 1
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, key, payload, attempts, max_attempts, run_at, counted, lease_until FROM claimed`,
      [ids, now, new Date(now.getTime() + earlyMs), Math.max(0, Math.round(leaseMs)), LOST_ATTEMPT_ERROR],
    );
    return rows.map((r) => ({
      id: r.id, tenantId: r.tenant_id, kind: r.kind, key: r.key, payload: r.payload ?? null,
      attempt: r.counted ? r.attempts : r.attempts + 1, maxAttempts: r.max_attempts, runAt: r.run_at,
      counted: r.counted, leaseUntil: r.lease_until,
    }));
  }

  /**
   * Undoes a claim whose outcome is unknown (its reply was lost: the connection broke, or the
   * statement timed out after the commit): rows this claim took, recognised by the lease it set,
   * go back to queued with the attempt it counted taken back. Nothing ran: the handler starts
   * only after a claim's reply. Returns how many rows it gave back.
   */
  async unclaim(ids: readonly string[], claimedAt: Date, leaseMs: number): Promise<number> {
    if (ids.length === 0) return 0;
    const { rows } = await sql<{ id: string }>(
      this.dataSource,
      `UPDATE jobs j SET state = 'q', lease_until = NULL, attempts = j.attempts - (j.run_at <= $2::timestamptz)::int
        WHERE j.id = ANY($1::bigint[]) AND j.state = 'r'
          AND j.lease_until = $2::timestamptz + $3 * interval '1 millisecond'
       RETURNING j.id::text AS id`,
      [ids, claimedAt, Math.max(0, Math.round(leaseMs))],
    );
    return rows.length;
  }

  /**
   * Counts the attempt of rows claimed ahead of their run time, as their handlers start
   * (attempts + 1, and a `lost` row for a previous attempt that left none). Guarded by state,
   * attempt and the claim's own lease, so a row rescued and claimed again meanwhile is not
   * touched. Returns the ids counted; the others are no longer this claim's and must not run.
   * Idempotent, so a count whose reply was lost can be sent again: a row this claim already
   * counted (attempts = attempt, same lease) is returned again, unchanged. Commits without the
   * WAL flush, like the claim: the completion's flush covers it.
   */
  async startClaimed(refs: readonly ClaimedAhead[], now: Date): Promise<Set<string>> {
    if (refs.length === 0) return new Set();
    const { rows } = await sql<{ id: string }>(
      this.dataSource,
      `WITH started AS (
         UPDATE jobs j SET attempts = t.attempt
           FROM unnest($1::bigint[], $2::int2[], $3::timestamptz[]) AS t(id, attempt, lease_until),
                (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
          WHERE j.id = t.id AND j.state = 'r' AND j.attempts IN (t.attempt - 1, t.attempt) AND j.lease_until = t.lease_until
         RETURNING j.id, j.attempts, j.tenant_id
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts - 1, tenant_id, $4, $4, 'lost', $5 FROM started WHERE attempts > 1
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id FROM started`,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), refs.map((r) => r.leaseUntil), now, LOST_ATTEMPT_ERROR],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Pushes the lease of running attempts out to `until` (the worker's heartbeat while their
   * handlers run). Guarded by state and attempt; returns the ids still held.
   */
  async extendLeases(refs: readonly DeliveryRef[], until: Date): Promise<Set<string>> {
    if (refs.length === 0) return new Set();
    const { rows } = await sql<{ id: string }>(
      this.dataSource,
      `UPDATE jobs j SET lease_until = $3
         FROM unnest($1::bigint[], $2::int2[]) AS t(id, attempt)
        WHERE j.id = t.id AND j.state = 'r' AND j.attempts = t.attempt
       RETURNING j.id::text AS id`,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), until],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Why these ids were not claimed (read after a claim that returned fewer rows). */
  async explainUnclaimed(ids: readonly string[], now: Date, earlyMs: number): Promise<UnclaimedJob[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{ id: string; state: string | null; run_at: Date | null; tenant_id: number | null; kind: string | null }>(
      this.dataSource,
      `SELECT t.id::text AS id, j.state, j.run_at, j.tenant_id, j.kind
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
            ? { id: r.id, reason: 'not_due', runAt: r.run_at, tenantId: r.tenant_id ?? 0, kind: r.kind ?? '' }
            : { id: r.id, reason: 'raced' }; // changed between the claim and this read
        default:
          return { id: r.id, reason: 'rescheduled' }; // 's': moved back to the cold tier
      }
    });
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
        records.map((r) => STATE_CODE[r.next]),
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
  async release(refs: readonly DeliveryRef[], now: Date, workerId: string, startedAt: Date[] = [], counted: boolean[] = []): Promise<ReleasedJob[]> {
    if (refs.length === 0) return [];
    // A row claimed ahead whose attempt was not counted yet goes back without a history row.
    const { rows } = await sql<{ id: string; tenant_id: number; kind: string; run_at: Date }>(
      this.dataSource,
      `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::int2[], $5::timestamptz[], $6::bool[]) AS t(id, attempt, started_at, counted)
       ), released AS (
         UPDATE jobs j SET state = 'q', lease_until = NULL
           FROM input i
          WHERE j.id = i.id AND j.state = 'r' AND j.attempts = i.attempt - (NOT i.counted)::int
         RETURNING j.id, j.tenant_id, j.kind, j.run_at, j.attempts
       ), history AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, worker_id, error)
         SELECT r.id, r.attempts, r.tenant_id, COALESCE(i.started_at, $3), $3, 'released', $4,
                'worker shut down before the handler finished'
           FROM released r JOIN input i ON i.id = r.id
          WHERE i.counted
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, tenant_id, kind, run_at FROM released`,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), now, workerId, refs.map((_, i) => startedAt[i] ?? null), refs.map((_, i) => counted[i] ?? true)],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, kind: r.kind, runAt: r.run_at }));
  }
}
