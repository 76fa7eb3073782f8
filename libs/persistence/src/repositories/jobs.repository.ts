import { Injectable } from '@nestjs/common';
import type { JobState } from '@almanac/domain';
import { DataSource, EntityManager } from 'typeorm';
import { type JobRecord, type JobRow, rowToJob } from '../job-record';
import { createdAtFromJobId } from '../job-id';
import { decodeState, STATE_CODE } from '../job-state.codec';
import { type Db, onConnection, sql } from '../sql';
import { FIND_JOBS_BY_PAIRS_SQL } from '../statements/find-jobs-by-keys.sql';
import { FIND_RETIRED_KEYS_SQL, FIND_RETIRED_PAIRS_SQL } from '../statements/find-retired-keys.sql';
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

/** A job and the tenant it is for: one item of insertMany. */
export interface TenantJob {
  tenantId: number;
  job: NewJob;
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

/** How insertMany runs its statements. */
export interface InsertOptions {
  /**
   * Outside a transaction: the longest the insert waits for any one lock (its lock_timeout, as
   * SET LOCAL), failing with SQLSTATE 55P03 past it. Ignored inside a caller's transaction.
   */
  lockTimeoutMs?: number;
}

/** Either the one aggregated row of created jobs (comma-joined ids and tenants, JSON array of keys) or an existing row. */
interface InsertRow extends Omit<Partial<JobRow>, 'id'> {
  created: boolean;
  id: string | null;
  tenants: string | null;
  key: string;
}

/** The jobs table's intent-level operations. Hot paths are single SQL statements. */
@Injectable()
export class JobsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Inserts up to MAX_INSERT_BATCH jobs for one tenant in one round trip (insertMany's).
   */
  insertBatch(tenantId: number, items: readonly NewJob[], db: Db = this.dataSource, over?: AbortSignal): Promise<InsertOutcome[]> {
    return this.insertMany(items.map((job) => ({ tenantId, job })), db, over);
  }

  /**
   * Inserts up to MAX_INSERT_BATCH jobs, of one tenant or several, in one round trip. Idempotent
   * on (tenant, key): an existing key is reported with its stored row and left untouched.
   * `over` (outside a transaction): the caller stopped waiting (onConnection). Aborted before the
   * batch has a pooled connection, it writes nothing; aborted while it runs, its statement is
   * stopped and rolled back (unless it had just committed): an API batch answered 503 at its
   * deadline must not write afterwards, beside the client's resend.
   */
  async insertMany(items: readonly TenantJob[], db: Db = this.dataSource, over?: AbortSignal, opts: InsertOptions = {}): Promise<InsertOutcome[]> {
    if (items.length === 0) return [];
    if (items.length > MAX_INSERT_BATCH) throw new RangeError(`insertBatch takes at most ${MAX_INSERT_BATCH} jobs (got ${items.length})`);
    const slotOf = slotsOf(items);
    const firstIndex = new Map<string, number>();
    const unique: TenantJob[] = [];
    for (const [i, item] of items.entries()) {
      if (Number.isNaN(item.job.runAt.getTime())) throw new RangeError(`item ${i}: runAt is not a valid date`);
      const slot = slotOf(item.tenantId, item.job.key);
      if (!firstIndex.has(slot)) {
        firstIndex.set(slot, i);
        unique.push(item);
      }
    }
    // Insert in the unique index's order (tenant, then key): two batches sharing new keys then
    // wait on each other in the same order and cannot deadlock, and the index is walked left to right.
    unique.sort((a, b) => a.tenantId - b.tenantId || (a.job.key < b.job.key ? -1 : a.job.key > b.job.key ? 1 : 0));
    const bySlot = over && db instanceof DataSource
      ? await onConnection(db, over, (c) => this.insertUnique(unique, slotOf, c.manager, opts))
      : await this.insertUnique(unique, slotOf, db, opts);
    return items.map((item) => {
      const slot = slotOf(item.tenantId, item.job.key);
      const outcome = bySlot.get(slot)!;
      return items[firstIndex.get(slot)!] === item || outcome.status === 'retired' ? outcome : { status: 'existing', job: outcome.job };
    });
  }

  private async insertUnique(unique: TenantJob[], slotOf: SlotOf, db: Db, opts: InsertOptions): Promise<Map<string, InsertOutcome>> {
    const out = new Map<string, InsertOutcome>();
    let pending = unique;
    const inTransaction = db instanceof EntityManager && !!db.queryRunner?.isTransactionActive;
    const lockTimeout = opts.lockTimeoutMs !== undefined && !inTransaction ? `${opts.lockTimeoutMs}ms` : null;
    // A retired key fails the INSERT (the jobs_refuse_retired_keys trigger, SQLSTATE AL001); the
    // batch is then asked about and goes again without them. Inside a caller's transaction a
    // failed statement would abort the transaction, so it asks first.
    let askRetired = inTransaction;
    // A key committed by a concurrent insert after this statement's snapshot is skipped by
    // ON CONFLICT yet invisible to the existing-row read; fetch those in a second step. Both
    // look-ups are one statement over (tenant, key) pairs, however many tenants the batch holds.
    for (let round = 0; pending.length > 0; round++) {
      if (round === 4) throw new Error(`insertBatch: ${pending.length} keys neither inserted nor found after 4 rounds`);
      if (askRetired) {
        for (const [tenantId, r] of await this.findRetiredPairs(pending, db)) out.set(slotOf(tenantId, r.key), r);
        pending = pending.filter((p) => !out.has(slotOf(p.tenantId, p.job.key)));
        if (pending.length === 0) break;
      }
      const n = pending.length;
      const tenants = new Array<number>(n), keys = new Array<string>(n), kinds = new Array<string>(n), runAts = new Array<Date>(n);
      const payloads = new Array<unknown>(n), maxAttempts = new Array<number>(n), states = new Array<string>(n);
      const traceParents = pending.some((p) => p.job.traceParent) ? pending.map((p) => p.job.traceParent ?? null) : [];
      for (let i = 0; i < n; i++) {
        const { tenantId, job: j } = pending[i];
        tenants[i] = tenantId;
        keys[i] = j.key;
        kinds[i] = j.kind;
        runAts[i] = j.runAt;
        payloads[i] = j.payload ?? null;
        maxAttempts[i] = j.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
        states[i] = STATE_CODE[j.state];
      }
      const params = [...[tenants, keys, kinds, runAts, payloads, maxAttempts, states, traceParents].map((a) => JSON.stringify(a)), lockTimeout];
      const rows = await this.insertStatement(db, round === 0 && !inTransaction, inTransaction, params);
      if (rows === RETIRED) {
        askRetired = true;
        continue;
      }
      const createdIds = new Map<string, string>();
      const existing = new Map<string, InsertRow>();
      for (const r of rows) {
        if (!r.created) existing.set(slotOf(r.tenant_id!, r.key), r);
        else if (r.id !== null) {
          const [ids, tenants, keys] = [r.id.split(','), r.tenants!.split(','), JSON.parse(r.key) as string[]];
          for (let i = 0; i < ids.length; i++) createdIds.set(slotOf(Number(tenants[i]), keys[i]), ids[i]);
        }
      }
      const missing: TenantJob[] = [];
      for (const p of pending) {
        const slot = slotOf(p.tenantId, p.job.key);
        const id = createdIds.get(slot);
        const r = existing.get(slot);
        if (id !== undefined) out.set(slot, { status: 'created', job: newJobRecord(p.tenantId, id, p.job) });
        else if (r) out.set(slot, { status: 'existing', job: rowToJob(r as JobRow) });
        else missing.push(p);
      }
      if (missing.length > 0) {
        for (const job of await this.findByPairs(missing, db)) out.set(slotOf(job.tenantId, job.key), { status: 'existing', job });
      }
      pending = missing.filter((p) => !out.has(slotOf(p.tenantId, p.job.key)));
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
  async findRetired(tenantId: number, keys: readonly string[], db: Db = this.dataSource, over?: AbortSignal): Promise<Extract<InsertOutcome, { status: 'retired' }>[]> {
    if (keys.length === 0) return [];
    // `over` (outside a transaction): the caller stopped waiting (onConnection).
    const read = (d: Db) => sql<{ key: string; removed_on: string; state: string; reserved_through: string | null; result_digest: string | null }>(d, FIND_RETIRED_KEYS_SQL, [tenantId, keys]);
    const { rows } = over && db === this.dataSource ? await onConnection(this.dataSource, over, (c) => read(c.manager)) : await read(db);
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

  /** The retired keys among `items`' (tenant, key) pairs, each with its tenant (any order). */
  private async findRetiredPairs(items: readonly TenantJob[], db: Db): Promise<[number, Extract<InsertOutcome, { status: 'retired' }>][]> {
    const { rows } = await sql<{ tenant_id: number; key: string; removed_on: string; state: string; reserved_through: string | null; result_digest: string | null }>(
      db,
      FIND_RETIRED_PAIRS_SQL,
      [items.map((i) => i.tenantId), items.map((i) => i.job.key)],
    );
    return rows.map((r) => [r.tenant_id, {
      status: 'retired', key: r.key, removedOn: r.removed_on, state: decodeState(r.state), reservedThrough: r.reserved_through, resultDigest: r.result_digest,
    }]);
  }

  /** The stored jobs among `items`' (tenant, key) pairs (any order). */
  private async findByPairs(items: readonly TenantJob[], db: Db): Promise<JobRecord[]> {
    const { rows } = await sql<JobRow>(db, FIND_JOBS_BY_PAIRS_SQL, [items.map((i) => i.tenantId), items.map((i) => i.job.key)]);
    return rows.map(rowToJob);
  }
}

const RETIRED = Symbol('retired');

/** A job's place in the unique index (tenant, key), as a map key. */
type SlotOf = (tenantId: number, key: string) => string;

/** The key alone when every item is one tenant's (a batch request: no string made per row). */
function slotsOf(items: readonly TenantJob[]): SlotOf {
  const first = items[0].tenantId;
  return items.every((i) => i.tenantId === first) ? (_, key) => key : (tenantId, key) => `${tenantId}:${key}`;
}

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
