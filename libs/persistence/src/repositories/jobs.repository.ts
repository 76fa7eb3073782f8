import { Injectable } from '@nestjs/common';
import type { JobState } from '@almanac/domain';
import { DataSource, EntityManager } from 'typeorm';
import { type JobRecord, type JobRow, rowToJob } from '../job-record';
import { createdAtFromJobId } from '../job-id';
import { decodeState, STATE_CODE } from '../job-state.codec';
import { type Db, onConnection, sql } from '../sql';
import { FIND_JOBS_BY_KEYS_SQL } from '../statements/find-jobs-by-keys.sql';
import { FIND_RETIRED_KEYS_SQL } from '../statements/find-retired-keys.sql';
import { FIND_USED_KEYS_SQL } from '../statements/find-used-keys.sql';
import { INSERT_BATCH_ON_CONFLICT } from '../statements/insert-batch-on-conflict.sql';
import { INSERT_BATCH_OPTIMISTIC } from '../statements/insert-batch-optimistic.sql';
import { isRetiredKeyError } from '../retired-key-error';

export const MAX_INSERT_BATCH = 1000;
/** Matches the column default in the core migration. */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** A job to insert. The API decides the initial state from the tier. */
export interface NewJob {
  kind: string;
  key: string;
  runAt: Date;
  payload?: unknown;
  maxAttempts?: number;
  /** `scheduled` for cold rows; `queued` for immediate/hot rows the caller enqueues next. */
  state: Extract<JobState, 'scheduled' | 'queued'>;
  /** The W3C traceparent of the span that created it (ingest's producer span), when tracing is on. */
  traceParent?: string | null;
}

/**
 * Per item, in input order. `existing` carries the stored row so the caller can compare
 * kind/runAt/payload (same body → 200, different → 409). A key repeated inside one batch:
 * the first occurrence wins; later ones are `existing` with the first one's job. `retired`: the
 * key named a job removed by retention on `removedOn` (a UTC day), which had ended in `state` with
 * a result whose digest is `resultDigest` (hex, statements/result-digest; null: no result); it
 * stays reserved through `reservedThrough` (null: forever).
 */
export type InsertOutcome =
  | { status: 'created'; job: JobRecord }
  | { status: 'existing'; job: JobRecord }
  | { status: 'retired'; key: string; removedOn: string; state: JobState; reservedThrough: string | null; resultDigest: string | null };

/** Either the one aggregated row of created jobs (comma-joined ids, JSON array of keys) or an existing row. */
interface InsertRow extends Omit<Partial<JobRow>, 'id'> {
  created: boolean;
  id: string | null;
  key: string;
}

/** The jobs table's intent-level operations. Hot paths are single SQL statements. */
@Injectable()
export class JobsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Inserts up to MAX_INSERT_BATCH jobs for one tenant in one round trip. Idempotent on
   * (tenant, key): an existing key is reported with its stored row and left untouched.
   * `over` (outside a transaction): the caller stopped waiting (onConnection). Aborted before the
   * batch has a pooled connection, it writes nothing; aborted while it runs, its statement is
   * stopped and rolled back (unless it had just committed): an API batch answered 503 at its
   * deadline must not write afterwards, beside the client's resend.
   */
  async insertBatch(tenantId: number, items: readonly NewJob[], db: Db = this.dataSource, over?: AbortSignal): Promise<InsertOutcome[]> {
    if (items.length === 0) return [];
    if (items.length > MAX_INSERT_BATCH) throw new RangeError(`insertBatch takes at most ${MAX_INSERT_BATCH} jobs (got ${items.length})`);
    const firstIndex = new Map<string, number>();
    const unique: NewJob[] = [];
    for (const [i, item] of items.entries()) {
      if (Number.isNaN(item.runAt.getTime())) throw new RangeError(`item ${i}: runAt is not a valid date`);
      if (!firstIndex.has(item.key)) {
        firstIndex.set(item.key, i);
        unique.push(item);
      }
    }
    // Insert in key order: two batches sharing new keys then wait on each other in the same
    // order and cannot deadlock, and the unique index is walked left to right.
    unique.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const byKey = over && db instanceof DataSource
      ? await onConnection(db, over, (c) => this.insertUnique(tenantId, unique, c.manager))
      : await this.insertUnique(tenantId, unique, db);
    return items.map((item) => {
      const first = items[firstIndex.get(item.key)!];
      const outcome = byKey.get(item.key)!;
      return first === item || outcome.status === 'retired' ? outcome : { status: 'existing', job: outcome.job };
    });
  }

  private async insertUnique(tenantId: number, unique: NewJob[], db: Db): Promise<Map<string, InsertOutcome>> {
    const out = new Map<string, InsertOutcome>();
    let pending = unique;
    const inTransaction = db instanceof EntityManager && !!db.queryRunner?.isTransactionActive;
    // A retired key fails the INSERT (the jobs_refuse_retired_keys trigger, SQLSTATE AL001); the
    // batch is then asked about and goes again without them. Inside a caller's transaction a
    // failed statement would abort the transaction, so it asks first.
    let askRetired = inTransaction;
    // A key committed by a concurrent insert after this statement's snapshot is skipped by
    // ON CONFLICT yet invisible to the existing-row read; fetch those in a second step.
    for (let round = 0; pending.length > 0; round++) {
      if (round === 4) throw new Error(`insertBatch: ${pending.length} keys neither inserted nor found after 4 rounds`);
      if (askRetired) {
        for (const r of await this.findRetired(tenantId, pending.map((j) => j.key), db)) out.set(r.key, r);
        pending = pending.filter((j) => !out.has(j.key));
        if (pending.length === 0) break;
      }
      const n = pending.length;
      const keys = new Array<string>(n), kinds = new Array<string>(n), runAts = new Array<Date>(n);
      const payloads = new Array<unknown>(n), maxAttempts = new Array<number>(n), states = new Array<string>(n);
      const traceParents = pending.some((j) => j.traceParent) ? pending.map((j) => j.traceParent ?? null) : [];
      for (let i = 0; i < n; i++) {
        const j = pending[i];
        keys[i] = j.key;
        kinds[i] = j.kind;
        runAts[i] = j.runAt;
        payloads[i] = j.payload ?? null;
        maxAttempts[i] = j.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
        states[i] = STATE_CODE[j.state];
      }
      const params = [tenantId, ...[keys, kinds, runAts, payloads, maxAttempts, states, traceParents].map((a) => JSON.stringify(a))];
      const rows = await this.insertStatement(db, round === 0 && !inTransaction, inTransaction, params);
      if (rows === RETIRED) {
        askRetired = true;
        continue;
      }
      const createdIds = new Map<string, string>();
      const existing = new Map<string, InsertRow>();
      for (const r of rows) {
        if (!r.created) existing.set(r.key, r);
        else if (r.id !== null) {
          const ids = r.id.split(',');
          const keys = JSON.parse(r.key) as string[];
          for (let i = 0; i < ids.length; i++) createdIds.set(keys[i], ids[i]);
        }
      }
      const missing: NewJob[] = [];
      for (const j of pending) {
        const id = createdIds.get(j.key);
        const r = existing.get(j.key);
        if (id !== undefined) out.set(j.key, { status: 'created', job: newJobRecord(tenantId, id, j) });
        else if (r) out.set(j.key, { status: 'existing', job: rowToJob(r as JobRow) });
        else missing.push(j);
      }
      if (missing.length > 0) {
        for (const job of await this.findByKeys(tenantId, missing.map((j) => j.key), db)) {
          out.set(job.key, { status: 'existing', job });
        }
      }
      pending = missing.filter((j) => !out.has(j.key));
    }
    return out;
  }

  /**
   * A plain INSERT first when `fast`, ON CONFLICT only after a unique violation
   * (INSERT_BATCH_OPTIMISTIC says why); `fast` is never inside a caller's transaction, which a
   * failed statement would abort. RETIRED: a key of the batch is retired (only outside a transaction).
   */
  private async insertStatement(db: Db, fast: boolean, inTransaction: boolean, params: unknown[]): Promise<InsertRow[] | typeof RETIRED> {
    try {
      if (!fast) return (await sql<InsertRow>(db, INSERT_BATCH_ON_CONFLICT, params)).rows;
      try {
        return (await sql<InsertRow>(db, INSERT_BATCH_OPTIMISTIC, params)).rows;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        return (await sql<InsertRow>(db, INSERT_BATCH_ON_CONFLICT, params)).rows;
      }
    } catch (err) {
      if (isRetiredKeyError(err) && !inTransaction) return RETIRED;
      throw err;
    }
  }

  /** Which of `keys` retention removed, keeping them reserved (any order): ingest's 409s, a schedule's removed runs. */
  async findRetired(tenantId: number, keys: readonly string[], db: Db = this.dataSource): Promise<Extract<InsertOutcome, { status: 'retired' }>[]> {
    if (keys.length === 0) return [];
    const { rows } = await sql<{ key: string; removed_on: string; state: string; reserved_through: string | null; result_digest: string | null }>(db, FIND_RETIRED_KEYS_SQL, [tenantId, keys]);
    return rows.map((r) => ({
      status: 'retired', key: r.key, removedOn: r.removed_on, state: decodeState(r.state), reservedThrough: r.reserved_through, resultDigest: r.result_digest,
    }));
  }

  /** Which of `keys` the tenant has used: a stored job's, or one retention removed and keeps reserved. */
  async knownKeys(tenantId: number, keys: readonly string[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const { rows } = await sql<{ key: string }>(this.dataSource, FIND_USED_KEYS_SQL, [tenantId, keys]);
    return rows.map((r) => r.key);
  }

  /** The tenant's stored jobs among `keys` (any order). */
  private async findByKeys(tenantId: number, keys: readonly string[], db: Db): Promise<JobRecord[]> {
    const { rows } = await sql<JobRow>(
      db,
      FIND_JOBS_BY_KEYS_SQL,
      [tenantId, keys],
    );
    return rows.map(rowToJob);
  }
}

const RETIRED = Symbol('retired');

function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

function isUniqueViolation(err: unknown): boolean {
  return errorCode(err) === '23505';
}

function newJobRecord(tenantId: number, id: string, j: NewJob): JobRecord {
  return {
    id,
    tenantId,
    kind: j.kind,
    key: j.key,
    runAt: j.runAt,
    state: j.state,
    attempts: 0,
    maxAttempts: j.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    payload: j.payload ?? null,
    result: null,
    lastError: null,
    leaseUntil: null,
    finishedAt: null,
    createdAt: createdAtFromJobId(id),
  };
}
