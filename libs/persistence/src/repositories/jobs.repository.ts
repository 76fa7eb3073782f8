import { Injectable } from '@nestjs/common';
import type { JobState } from '@almanac/domain';
import { DataSource, EntityManager } from 'typeorm';
import { JOB_COLUMNS, type JobRecord, type JobRow, rowToJob } from '../job-record';
import { createdAtFromJobId } from '../job-id';
import { STATE_CODE } from '../job-state.codec';
import { type Db, sql } from '../sql';

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
}

/**
 * Per item, in input order. `existing` carries the stored row so the caller can compare
 * kind/runAt/payload (same body → 200, different → 409). A key repeated inside one batch:
 * the first occurrence wins; later ones are `existing` with the first one's job.
 */
export type InsertOutcome = { status: 'created'; job: JobRecord } | { status: 'existing'; job: JobRecord };

/** Either the one aggregated row of created jobs (comma-joined ids, JSON array of keys) or an existing row. */
interface InsertRow extends Omit<Partial<JobRow>, 'id'> {
  created: boolean;
  id: string | null;
  key: string;
}

/*
 * One statement per batch. Each column travels as one JSON array, zipped by ROWS FROM: Node
 * serialises it natively (pg's per-element array escaping cost ~3 µs/row more, measured) and
 * Postgres parses it no slower than typed arrays or one document per row (json_to_recordset
 * measured ~15% slower). A JSON `null` payload is stored as SQL NULL. The last branch reads
 * the rows that already existed from the statement's snapshot (rows inserted by this statement
 * are invisible to it), and only when something was skipped. The created rows come back as
 * one aggregated row (ids and keys in the same order) instead of a thousand protocol rows.
 *
 * Skipping existing keys costs a unique-index probe per row before the insert, whether by
 * ON CONFLICT DO NOTHING (speculative insertion) or by an anti-join: 20-30% more Postgres CPU
 * per row (bench/storage.ts). Most batches hold only new keys, so outside a caller's
 * transaction a plain INSERT goes first; if any key exists (a replay, or a concurrent batch
 * committed it) the statement fails as a whole with a unique violation and the batch is
 * retried with ON CONFLICT. Keys are sorted, so a replayed batch fails on its first row.
 */
const INPUT = `ROWS FROM (json_array_elements_text($2::json), json_array_elements_text($3::json), json_array_elements_text($4::json),
                 json_array_elements($5::json), json_array_elements_text($6::json), json_array_elements_text($7::json)) AS i(k, n, r, p, m, s)`;
const COLUMNS = `$1, k, n, r::timestamptz, CASE WHEN json_typeof(p) = 'null' THEN NULL ELSE p END, m::smallint, s::"char"`;
const INSERTED_AND_EXISTING = `
SELECT true AS created, string_agg(id::text, ',') AS id, json_agg(key)::text AS key, NULL::int AS tenant_id, NULL::text AS kind, NULL::timestamptz AS run_at,
       NULL::"char" AS state, NULL::smallint AS attempts, NULL::smallint AS max_attempts, NULL AS payload,
       NULL AS result, NULL::text AS last_error, NULL::timestamptz AS lease_until, NULL::timestamptz AS finished_at
  FROM ins
UNION ALL
SELECT false, j.id::text, j.key, j.tenant_id, j.kind, j.run_at, j.state, j.attempts, j.max_attempts, j.payload,
       j.result, j.last_error, j.lease_until, j.finished_at
  FROM json_array_elements_text($2::json) AS e(key) JOIN jobs j ON j.tenant_id = $1 AND j.key = (e.key COLLATE "C")
 WHERE (SELECT count(*) FROM ins) < json_array_length($2::json)`;

const INSERT_BATCH_OPTIMISTIC_SQL = `
WITH ins AS (
  INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state)
  SELECT ${COLUMNS} FROM ${INPUT}
  RETURNING id, key
)
SELECT true AS created, string_agg(id::text, ',') AS id, json_agg(key)::text AS key FROM ins`;

const INSERT_BATCH_ON_CONFLICT_SQL = `
WITH ins AS (
  INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state)
  SELECT ${COLUMNS} FROM ${INPUT}
  ON CONFLICT (tenant_id, key) DO NOTHING
  RETURNING id, key
)${INSERTED_AND_EXISTING}`;

/** The jobs table's intent-level operations. Hot paths are single SQL statements. */
@Injectable()
export class JobsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Inserts up to MAX_INSERT_BATCH jobs for one tenant in one round trip. Idempotent on
   * (tenant, key): an existing key is reported with its stored row and left untouched.
   */
  async insertBatch(tenantId: number, items: readonly NewJob[], db: Db = this.dataSource): Promise<InsertOutcome[]> {
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
    const byKey = await this.insertUnique(tenantId, unique, db);
    return items.map((item) => {
      const first = items[firstIndex.get(item.key)!];
      const outcome = byKey.get(item.key)!;
      return first === item ? outcome : { status: 'existing', job: outcome.job };
    });
  }

  private async insertUnique(tenantId: number, unique: NewJob[], db: Db): Promise<Map<string, InsertOutcome>> {
    const out = new Map<string, InsertOutcome>();
    let pending = unique;
    // A key committed by a concurrent insert after this statement's snapshot is skipped by
    // ON CONFLICT yet invisible to the existing-row read; fetch those in a second step.
    for (let round = 0; pending.length > 0; round++) {
      if (round === 3) throw new Error(`insertBatch: ${pending.length} keys neither inserted nor found after 3 rounds`);
      const n = pending.length;
      const keys = new Array<string>(n), kinds = new Array<string>(n), runAts = new Array<Date>(n);
      const payloads = new Array<unknown>(n), maxAttempts = new Array<number>(n), states = new Array<string>(n);
      for (let i = 0; i < n; i++) {
        const j = pending[i];
        keys[i] = j.key;
        kinds[i] = j.kind;
        runAts[i] = j.runAt;
        payloads[i] = j.payload ?? null;
        maxAttempts[i] = j.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
        states[i] = STATE_CODE[j.state];
      }
      const params = [tenantId, ...[keys, kinds, runAts, payloads, maxAttempts, states].map((a) => JSON.stringify(a))];
      const rows = await this.insertStatement(db, round, params);
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

  private async insertStatement(db: Db, round: number, params: unknown[]): Promise<InsertRow[]> {
    // Inside a caller's transaction a failed statement would abort the whole transaction.
    const fast = round === 0 && !(db instanceof EntityManager && db.queryRunner?.isTransactionActive);
    if (!fast) return (await sql<InsertRow>(db, INSERT_BATCH_ON_CONFLICT_SQL, params)).rows;
    try {
      return (await sql<InsertRow>(db, INSERT_BATCH_OPTIMISTIC_SQL, params)).rows;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      return (await sql<InsertRow>(db, INSERT_BATCH_ON_CONFLICT_SQL, params)).rows;
    }
  }

  /** The tenant's stored jobs among `keys` (any order). */
  private async findByKeys(tenantId: number, keys: readonly string[], db: Db): Promise<JobRecord[]> {
    const { rows } = await sql<JobRow>(
      db,
      `SELECT ${JOB_COLUMNS} FROM unnest($2::text[]) AS k(key) JOIN jobs j ON j.tenant_id = $1 AND j.key = (k.key COLLATE "C")`,
      [tenantId, keys],
    );
    return rows.map(rowToJob);
  }
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
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
