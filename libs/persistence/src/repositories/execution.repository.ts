import { LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { STATE_CODE } from '../job-state.codec';
import { Db, sql } from '../sql';
import { CLAIM_FOR_RUN_SQL } from '../statements/claim-for-run.sql';
import { COMPLETE_ATTEMPTS_SQL } from '../statements/complete-attempts.sql';
import { EXTEND_LEASES_SQL } from '../statements/extend-leases.sql';
import { READ_UNCLAIMED_SQL } from '../statements/read-unclaimed.sql';
import { RELEASE_DELIVERIES_SQL } from '../statements/release-deliveries.sql';
import { START_CLAIMED_SQL } from '../statements/start-claimed.sql';
import { UNCLAIM_SQL } from '../statements/unclaim.sql';

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
   * attempt left no history row (its worker died) gets a `lost` row for it. The claim commits
   * without waiting for the WAL flush (CLAIM_FOR_RUN_SQL says why that is safe).
   */
  async claimForRun(ids: readonly string[], now: Date, earlyMs: number, leaseMs: number): Promise<RunnableJob[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{
      id: string; tenant_id: number; kind: string; key: string; payload: unknown;
      attempts: number; max_attempts: number; run_at: Date; counted: boolean; lease_until: Date;
    }>(
      this.dataSource,
      CLAIM_FOR_RUN_SQL,
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
      UNCLAIM_SQL,
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
      START_CLAIMED_SQL,
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
      EXTEND_LEASES_SQL,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), until],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Why these ids were not claimed (read after a claim that returned fewer rows). */
  async explainUnclaimed(ids: readonly string[], now: Date, earlyMs: number): Promise<UnclaimedJob[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{ id: string; state: string | null; run_at: Date | null; tenant_id: number | null; kind: string | null }>(
      this.dataSource,
      READ_UNCLAIMED_SQL,
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
      COMPLETE_ATTEMPTS_SQL,
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
    const { rows } = await sql<{ id: string; tenant_id: number; kind: string; run_at: Date }>(
      this.dataSource,
      RELEASE_DELIVERIES_SQL,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), now, workerId, refs.map((_, i) => startedAt[i] ?? null), refs.map((_, i) => counted[i] ?? true)],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, kind: r.kind, runAt: r.run_at }));
  }
}
