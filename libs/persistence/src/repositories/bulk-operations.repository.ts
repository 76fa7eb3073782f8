import { BULK_CHUNK_JOBS, type BulkAction, type BulkChange, type BulkFilter, type BulkState } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { retryingIdClash } from '../id-clash';
import { type Db, onConnection, sql } from '../sql';
import { type BulkOperationRecord, type OperationRow, toRecord } from './bulk-operation-record';
import { APPLY_BULK_CANCEL_SQL, APPLY_BULK_RESCHEDULE_SQL, TAKE_BULK_STEP_LOCK } from '../statements/apply-bulk-chunk.sql';
import { COUNT_BULK_FAILURE_SQL, OPEN_BULK_OPERATIONS_SQL, REMOVE_CHUNKS_OF_ENDED_SQL } from '../statements/bulk-failures.sql';
import { BULK_OPERATION_COLUMNS, CREATE_BULK_OPERATION_SQL } from '../statements/create-bulk-operation.sql';
import { demoteToScheduled } from '../statements/demote-to-scheduled.sql';
import { BOUND_MATCH_LOCK_WAITS_SQL, MATCH_BULK_OPERATION_SQL } from '../statements/match-bulk-operation.sql';

/** A row a reschedule made queued: the hot queue needs it (the tenant is the operation's). */
export interface BulkHotRow {
  id: string;
  dueMs: number;
  kind: string;
}

export type BulkChunkOutcome =
  | { applied: false }
  | { applied: true; state: BulkState; changed: number; skipped: number; hot: BulkHotRow[] };

interface AppliedRow {
  state: BulkState;
  changed: number;
  skipped: number;
  hot: { id: string; runAt: string; kind: string }[];
}

/** pg_advisory_xact_lock's first key for "a tenant's bulk operations are being created". */
export const BULK_CREATE_LOCK = 17_003;

const STATE_CODES = { scheduled: 's', queued: 'q' } as const;

/** Bulk operations by filter: accepting, matching (a snapshot of ids in chunks) and applying chunk by chunk. */
@Injectable()
export class BulkOperationsRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Accepts an operation; null when the tenant already has `maxOpen` pending or running. With a
   * `key` the tenant used before, the operation it names instead (`created: false`, whatever that
   * one asked for: the caller compares), over the limit or not.
   */
  async create(
    tenantId: number, action: BulkAction, filter: BulkFilter, change: BulkChange | null, maxOpen: number, key: string | null = null,
  ): Promise<{ op: BulkOperationRecord; created: boolean } | null> {
    // Serialised per tenant, so concurrent requests cannot all see the count below the limit
    // (the INSERT's own snapshot is taken after the lock), nor both miss the same key.
    return retryingIdClash('bulk_operations', () => this.db.transaction(async (tx) => {
      await sql(tx, `SELECT pg_advisory_xact_lock($1, $2)`, [BULK_CREATE_LOCK, tenantId]);
      if (key !== null) {
        const { rows: found } = await sql<OperationRow>(tx, `SELECT ${BULK_OPERATION_COLUMNS} FROM bulk_operations WHERE tenant_id = $1 AND key = $2`, [tenantId, key]);
        if (found[0]) return { op: toRecord(found[0]), created: false };
      }
      const { rows } = await sql<OperationRow>(tx, CREATE_BULK_OPERATION_SQL, [tenantId, action, JSON.stringify(filter), change && JSON.stringify(change), maxOpen, key]);
      return rows[0] ? { op: toRecord(rows[0]), created: true } : null;
    }));
  }

  /** One operation of one tenant (another tenant's id finds nothing). `over`: the caller stopped waiting (onConnection). */
  async findForTenant(tenantId: number, id: string, over?: AbortSignal): Promise<BulkOperationRecord | null> {
    const { rows } = await onConnection(this.db, over, (c) => sql<OperationRow>(c.manager, `SELECT ${BULK_OPERATION_COLUMNS} FROM bulk_operations WHERE id = $1 AND tenant_id = $2`, [id, tenantId]));
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /**
   * Pending and running operations that may be tried now (not backing off after a failure: 10 s
   * per failure in a row, at most 5 min; see OPEN_BULK_OPERATIONS_SQL), fair
   * between tenants: every tenant's oldest, then every tenant's second, up to `perTenant`, each
   * round starting after tenant `afterTenant`. A tenant's many open operations take no more of
   * the `limit` than one, nor keep later tenants' out.
   */
  async open(limit: number, perTenant: number, afterTenant = 0): Promise<BulkOperationRecord[]> {
    const { rows } = await sql<OperationRow>(this.db, OPEN_BULK_OPERATIONS_SQL, [limit, perTenant, afterTenant]);
    return rows.map(toRecord);
  }

  /**
   * Matches a pending operation's filter and makes it running with its chunks, in one
   * transaction; more than `maxJobs` matched fails it instead (nothing is changed). Skips an
   * operation another replica is matching (it holds the step lock) or that is no longer pending.
   * The operation row is not locked while the match reads: a cancel meanwhile answers at once,
   * and the match, finding it no longer pending at the end, rolls its chunks back (null). Its lock
   * waits end before its statement timeout (BOUND_MATCH_LOCK_WAITS_SQL).
   */
  async match(op: BulkOperationRecord, maxJobs: number): Promise<BulkState | null> {
    const state = await this.db
      .transaction(async (tx): Promise<BulkState | null> => {
        await sql(tx, BOUND_MATCH_LOCK_WAITS_SQL);
        const { rows: mine } = await sql(tx, `SELECT id FROM bulk_operations WHERE id = $1 AND state = 'pending' AND ${TAKE_BULK_STEP_LOCK}`, [op.id]);
        if (mine.length === 0) return null;
        const f = op.filter;
        const { rows } = await sql<{ n: number }>(tx, MATCH_BULK_OPERATION_SQL, [
          op.id, op.tenantId, f.state ? [STATE_CODES[f.state]] : ['s', 'q'], f.kind ?? null,
          f.keyPrefix === undefined ? null : likePrefix(f.keyPrefix), f.runAtFrom ?? null, f.runAtTo ?? null, maxJobs + 1, BULK_CHUNK_JOBS,
        ]);
        const matched = rows.reduce((sum, r) => sum + Number(r.n), 0);
        if (matched > maxJobs) throw new TooManyMatched(); // rolls the chunks back
        const next: BulkState = matched === 0 ? 'done' : 'running';
        const { rows: started } = await sql(
          tx,
          `UPDATE bulk_operations SET state = $4, matched = $2, chunks = $3, started_at = now(), failures = 0, lasting_failures = 0,
                  last_failure_at = NULL, finished_at = CASE WHEN $4 = 'done' THEN now() END WHERE id = $1 AND state = 'pending' RETURNING id`,
          [op.id, matched, rows.length, next],
        );
        if (started.length === 0) throw new EndedMeanwhile(); // cancelled while it matched: roll the chunks back
        return next;
      })
      .catch((err: unknown) => {
        if (err instanceof TooManyMatched) return 'failed' as const;
        if (err instanceof EndedMeanwhile) return null;
        throw err;
      });
    if (state === 'failed') await this.fail(op.id, `the filter matches more than ${maxJobs} jobs (ALMANAC_BULK_MAX_JOBS); narrow it, for example with runAtFrom and runAtTo`);
    return state;
  }

  /** Applies one chunk (see APPLY_BULK_CANCEL_SQL); `hotUntil` is the end of the hot horizon now. */
  async apply(op: BulkOperationRecord, chunk: number, hotUntil: Date, db: Db = this.db): Promise<BulkChunkOutcome> {
    const [text, params] = op.action === 'cancel' ? [APPLY_BULK_CANCEL_SQL, [op.id, chunk]] : [APPLY_BULK_RESCHEDULE_SQL, [op.id, chunk, hotUntil]];
    const { rows } = await sql<AppliedRow>(db, text, params);
    const r = rows[0];
    if (!r) return { applied: false };
    const hot = r.hot.map((h) => ({ id: h.id, dueMs: Date.parse(h.runAt), kind: h.kind }));
    return { applied: true, state: r.state, changed: r.changed, skipped: r.skipped, hot };
  }

  /** Rows a chunk made queued whose hints the hot queue refused: see demoteToScheduled. */
  demoteToScheduled(rows: readonly BulkHotRow[]): Promise<number> {
    return demoteToScheduled(this.db, rows.map((r) => ({ id: r.id, runAt: new Date(r.dueMs) })));
  }

  /**
   * Counts a run in which the operation's step failed, `lasting` when its cause recurs however
   * often the step is tried (the caller judges): those in a row are counted apart, and any other
   * failure ends their row. Counted only if the operation was due, so replicas that meet the
   * same cause back to back count it once (`counted` says which call did). The counts either way,
   * or null if the operation has ended.
   */
  async countFailure(id: string, lasting: boolean): Promise<{ counted: boolean; failures: number; lasting: number } | null> {
    const { rows } = await sql<{ counted: boolean; failures: number; lasting: number }>(this.db, COUNT_BULK_FAILURE_SQL, [id, lasting]);
    return rows[0] ?? null;
  }

  /** Removes the chunk rows ended operations left (REMOVE_CHUNKS_OF_ENDED_SQL); how many. */
  async removeChunksOfEnded(): Promise<number> {
    return (await sql(this.db, REMOVE_CHUNKS_OF_ENDED_SQL, [])).rowCount ?? 0;
  }

  /**
   * Stops a tenant's open operation and removes its chunks not applied. It waits on no match or
   * chunk in flight (they hold the step lock, not the row): a match meanwhile rolls back, and a
   * chunk in flight is the last (its chunk row, which it is removing, is skipped here; should
   * that chunk fail, the next sweep run removes the row). The DELETE, a statement of
   * its own, sees the chunks of a match that just committed. Null: not the tenant's, or not open.
   */
  async cancel(tenantId: number, id: string): Promise<BulkOperationRecord | null> {
    return this.db.transaction(async (tx) => {
      const { rows } = await sql<OperationRow>(
        tx,
        `UPDATE bulk_operations SET state = 'cancelled', finished_at = now()
          WHERE id = $1 AND tenant_id = $2 AND state IN ('pending', 'running') RETURNING ${BULK_OPERATION_COLUMNS}`,
        [id, tenantId],
      );
      if (!rows[0]) return null;
      await sql(
        tx,
        `DELETE FROM bulk_operation_chunks WHERE (operation_id, chunk) IN
           (SELECT operation_id, chunk FROM bulk_operation_chunks WHERE operation_id = $1 FOR UPDATE SKIP LOCKED)`,
        [id],
      );
      return toRecord(rows[0]);
    });
  }

  /** Fails an open operation with `error` and removes its chunks; false if it had ended. */
  async fail(id: string, error: string): Promise<boolean> {
    const { rowCount } = await sql(this.db, `UPDATE bulk_operations SET state = 'failed', error = $2, finished_at = now() WHERE id = $1 AND state IN ('pending', 'running')`, [id, error]);
    await sql(this.db, `DELETE FROM bulk_operation_chunks WHERE operation_id = $1`, [id]);
    return rowCount > 0;
  }
}

class TooManyMatched extends Error {}
class EndedMeanwhile extends Error {}

/** A LIKE pattern matching keys that start with `prefix` (its own % _ \ taken literally). */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
