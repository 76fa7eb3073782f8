import type { Hint } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { STATE_CODE } from '../job-state.codec';
import { inIdOrder } from '../lock-order';
import { epochMs, plainArray } from '../plain-array';
import { Db, onConnection, sql } from '../sql';
import { CLAIM_FOR_RUN } from '../statements/claim-for-run.sql';
import { COMPLETE_ATTEMPTS } from '../statements/complete-attempts.sql';
import { EXTEND_LEASES_SQL } from '../statements/extend-leases.sql';
import { RELEASE_DELIVERIES_SQL } from '../statements/release-deliveries.sql';
import { SET_ASIDE_JOB_SQL } from '../statements/set-aside-job.sql';
import { refusedValue, storedJson } from '../stored-json';

/**
 * The delivery hot path: a worker claims the rows it is about to run and records how each
 * attempt ended. Every method is one statement for a whole batch (arrays through `unnest`), so
 * the cost per job is a share of a round trip, not a round trip. Every state change is guarded
 * by the state (and, after the claim, the attempt number) it expects: a stale or duplicate
 * delivery changes nothing.
 */

export interface DeliveryRef {
  id: string;
  attempt: number;
}

/** A delivery's key, `id:attempt`: one row can have two attempts running on one worker (one rescued, one claimed again). */
export const refKey = (ref: DeliveryRef): string => `${ref.id}:${ref.attempt}`;

/** A row this worker claimed: everything its handler needs. */
export interface RunnableJob {
  id: string;
  tenantId: number;
  kind: string;
  key: string;
  payload: unknown;
  /** The attempt this run is (the row's attempts, counted by the claim). */
  attempt: number;
  maxAttempts: number;
  /** The W3C traceparent of the span that created the job, for the run's span link; null without one. */
  traceParent: string | null;
}

/** What a claim did: the rows it took, and queued rows not due yet by the worker's clock. */
export interface ClaimResult {
  claimed: RunnableJob[];
  early: { id: string; dueMs: number }[];
}

/** The job's next state after an attempt (state codes of job-state.codec). */
export type CompletionState = 'succeeded' | 'dead' | 'scheduled' | 'queued';

/** How one attempt ended (`job_attempts.outcome`); the subset of AttemptOutcome a worker writes. */
export type ExecutionOutcome = 'succeeded' | 'failed' | 'snoozed' | 'discarded' | 'released';

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

/** A released row, as a hint to put back. */
export type ReleasedJob = Hint;


@Injectable()
export class ExecutionRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * queued → running for every row among `ids` due by `dueBy`: the attempt counted, lease until
   * `leaseUntil`, marked as `workerId`'s (CLAIM_FOR_RUN). Rows in any other state are left
   * alone: with several hints of one row, the update decides which one runs it. Sent again with
   * the same lease (its reply was lost), it returns what the first one took.
   */
  async claim(ids: readonly string[], dueBy: Date, leaseUntil: Date, workerId: number): Promise<ClaimResult> {
    if (ids.length === 0) return { claimed: [], early: [] };
    const { rows } = await sql<{
      id: string; tenant_id: number; kind: string; key: string; payload: unknown;
      attempts: number; max_attempts: number; trace_parent: string | null; run_at: Date; claimed: boolean;
    }>(this.dataSource, CLAIM_FOR_RUN, [plainArray(inIdOrder(ids, (id) => id)), dueBy, leaseUntil, workerId]);
    const out: ClaimResult = { claimed: [], early: [] };
    for (const r of rows) {
      if (!r.claimed) out.early.push({ id: r.id, dueMs: r.run_at.getTime() });
      else out.claimed.push({ id: r.id, tenantId: r.tenant_id, kind: r.kind, key: r.key, payload: r.payload ?? null, attempt: r.attempts, maxAttempts: r.max_attempts, traceParent: r.trace_parent });
    }
    return out;
  }

  /** Sets aside a queued job its claim cannot take (SET_ASIDE_JOB_SQL); whether it was still queued. */
  async setAside(id: string, reason: string, now: Date): Promise<boolean> {
    const { rowCount } = await sql(this.dataSource, SET_ASIDE_JOB_SQL, [id, reason, now]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Pushes the lease of running attempts out to `until` (the worker's heartbeat while their
   * handlers run), with each one's progress reported since, as JSON (null: none). Guarded by
   * state and attempt; returns the attempts still held, by refKey (an id alone would keep an
   * older attempt of the row alive). `over`: the caller gave up (onConnection).
   */
  async extendLeases(unordered: readonly (DeliveryRef & { progress?: string | null })[], until: Date, over?: AbortSignal): Promise<Set<string>> {
    if (unordered.length === 0) return new Set();
    const refs = inIdOrder(unordered, (r) => r.id);
    const { rows } = await onConnection(this.dataSource, over, (c) => sql<DeliveryRef>(
      c.manager,
      EXTEND_LEASES_SQL,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), until, refs.map((r) => r.progress ?? null)],
    ));
    return new Set(rows.map(refKey));
  }

  /**
   * Records how attempts ended: one guarded UPDATE of the jobs (running, same attempt) and one
   * INSERT of their history rows, only for the jobs the update matched. Returns the ids that
   * were applied; the rest were stale (rescued, released or finished by another delivery).
   * Pass the handler's transaction as `db` to commit its writes with the completion.
   */
  async complete(unordered: readonly CompletionRecord[], now: Date, db: Db = this.dataSource): Promise<Set<string>> {
    if (unordered.length === 0) return new Set();
    const records = inIdOrder(unordered, (r) => r.id);
    const { rows } = await sql<{ id: string }>(
      db,
      COMPLETE_ATTEMPTS,
      [
        plainArray(records.map((r) => r.id)),
        plainArray(records.map((r) => r.attempt)),
        plainArray(records.map((r) => STATE_CODE[r.next])),
        plainArray(records.map((r) => (r.next === 'scheduled' || r.next === 'queued' ? epochMs(r.runAt) : null))),
        records.map(resultJson),
        records.map(errorText),
        plainArray(records.map((r) => r.tenantId)),
        plainArray(records.map((r) => r.outcome)),
        plainArray(records.map((r) => r.startedAt.getTime())),
        plainArray(records.map((r) => r.finishedAt.getTime())),
        plainArray(records.map((r) => r.workerId)),
        now,
      ],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * running → queued for attempts a worker gives back unfinished (graceful shutdown), with a
   * `released` history row: the attempt still counts, its handler did start. Guarded like
   * `complete`; returns what was released, so the caller puts its hints back.
   */
  async release(unordered: readonly DeliveryRef[], now: Date, workerName: string, startedAt: readonly Date[]): Promise<ReleasedJob[]> {
    if (unordered.length === 0) return [];
    const refs = inIdOrder(unordered.map((r, i) => ({ ...r, startedAt: startedAt[i] ?? now })), (r) => r.id);
    const { rows } = await sql<{ id: string; tenant_id: number; kind: string; run_at: Date }>(
      this.dataSource,
      RELEASE_DELIVERIES_SQL,
      [refs.map((r) => r.id), refs.map((r) => r.attempt), now, workerName, refs.map((r) => r.startedAt)],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, kind: r.kind, dueMs: r.run_at.getTime() }));
  }
}

/** A record's result as JSON text, refused before the statement as Postgres would refuse it (storedJson). */
function resultJson(r: CompletionRecord): string | null {
  return storedJson(r.result, `the result of job ${r.id}`);
}

/** A record's error text; one with U+0000 is refused as Postgres' text would refuse it (22021), before the statement. */
function errorText(r: CompletionRecord): string | null {
  if (r.error?.includes('\u0000')) throw refusedValue('22021', `the error text of job ${r.id} holds U+0000`);
  return r.error ?? null;
}
