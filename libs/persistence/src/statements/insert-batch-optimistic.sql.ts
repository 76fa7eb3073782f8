import { prepared } from '../sql';

/**
 * The batch as rows: the eight JSON arrays ($1 … $8) zipped. ROWS FROM pads a shorter array with
 * NULLs, so $8 (traceparents) is `[]` when no job of the batch carries one and costs nothing.
 */
export const INSERT_BATCH_INPUT = `ROWS FROM (json_array_elements_text($1::json), json_array_elements_text($2::json), json_array_elements_text($3::json),
                 json_array_elements_text($4::json), json_array_elements($5::json), json_array_elements_text($6::json),
                 json_array_elements_text($7::json), json_array_elements_text($8::json)) AS i(tn, k, n, r, p, m, s, t)`;
/** The columns INSERT_BATCH_VALUES fills. */
export const INSERT_BATCH_COLUMNS = 'tenant_id, key, kind, run_at, payload, max_attempts, state, trace_parent';
/**
 * Bounds the insert's lock waits when $9 (text, say '150ms') is not NULL: set_config with
 * is_local is SET LOCAL, here until the statement's own transaction ends (never used inside a
 * caller's). An uncorrelated subquery runs once, as an InitPlan, before the first row goes in.
 */
export const INSERT_BATCH_LOCK_WAIT = `(SELECT $9::text IS NULL OR set_config('lock_timeout', $9, true) IS NOT NULL)`;
/** One job row's values. */
export const INSERT_BATCH_VALUES = `tn::int, k, n, r::timestamptz, CASE WHEN json_typeof(p) = 'null' THEN NULL ELSE p END, m::smallint, s::"char", t`;

/**
 * Inserts a batch of jobs, of one tenant or several, failing as a whole (unique violation) if
 * any key exists; INSERT_BATCH_ON_CONFLICT is the retry. Returns one aggregated row of the created jobs.
 *
 * $1 … $8 json arrays, one element per job (sorted by tenant, then key): tenants, keys, kinds,
 * run times, payloads, max attempts, state codes, W3C traceparents (or `[]`); $9 text, the
 * statement's lock_timeout or NULL (INSERT_BATCH_LOCK_WAIT). Several tenants' single POSTs share
 * one statement, and its commit (one insert per tenant at 1,000 POSTs/s from 50 tenants: p99
 * 74 ms against 8 ms from one, bench/ingest.ts --tenants).
 *
 * One statement per batch. Each column travels as one JSON array, zipped by ROWS FROM: Node
 * serialises it natively (pg's per-element array escaping cost ~3 µs/row more, measured) and
 * Postgres parses it no slower than typed arrays or one document per row (json_to_recordset
 * measured ~15% slower). A JSON `null` payload is stored as SQL NULL. The last branch reads
 * the rows that already existed from the statement's snapshot (rows inserted by this statement
 * are invisible to it), and only when something was skipped. The created rows come back as
 * one aggregated row (ids, tenants and keys in the same order) instead of a thousand protocol rows.
 *
 * Skipping existing keys costs a unique-index probe per row before the insert, whether by
 * ON CONFLICT DO NOTHING (speculative insertion) or by an anti-join: 20-30% more Postgres CPU
 * per row (bench/storage.ts). Most batches hold only new keys, so outside a caller's
 * transaction a plain INSERT goes first; if any key exists (a replay, or a concurrent batch
 * committed it) the statement fails as a whole with a unique violation and the batch is
 * retried with ON CONFLICT. Keys are sorted, so a replayed batch fails on its first row.
 * A key retention removed fails the statement too (SQLSTATE AL001, the jobs_refuse_retired_keys
 * trigger); the caller asks find-retired-keys about the batch.
 */
export const INSERT_BATCH_OPTIMISTIC = prepared('almanac_insert_batch_optimistic', `
WITH ins AS (
  INSERT INTO jobs (${INSERT_BATCH_COLUMNS})
  SELECT ${INSERT_BATCH_VALUES} FROM ${INSERT_BATCH_INPUT} WHERE ${INSERT_BATCH_LOCK_WAIT}
  RETURNING id, tenant_id, key
)
SELECT true AS created, string_agg(id::text, ',') AS id, string_agg(tenant_id::text, ',') AS tenants, json_agg(key)::text AS key FROM ins`);
