import { prepared } from '../sql';
import { INSERT_BATCH_COLUMNS, INSERT_BATCH_INPUT, INSERT_BATCH_LOCK_WAIT, INSERT_BATCH_VALUES } from './insert-batch-optimistic.sql';
import { jobPayload } from './job-payload.sql';

/** The created jobs as one aggregated row, then the rows that already existed. */
const INSERTED_AND_EXISTING = `
SELECT true AS created, string_agg(id::text, ',') AS id, string_agg(tenant_id::text, ',') AS tenants, json_agg(key)::text AS key, NULL::int AS tenant_id, NULL::text AS kind, NULL::timestamptz AS run_at,
       NULL::"char" AS state, NULL::smallint AS attempts, NULL::smallint AS max_attempts, NULL AS payload,
       NULL AS result, NULL::text AS last_error, NULL::timestamptz AS lease_until, NULL::timestamptz AS finished_at
  FROM ins
UNION ALL
SELECT false, j.id::text, NULL, j.key, j.tenant_id, j.kind, j.run_at, j.state, j.attempts, j.max_attempts, ${jobPayload('j')},
       j.result, j.last_error, j.lease_until, j.finished_at
  FROM ROWS FROM (json_array_elements_text($1::json), json_array_elements_text($2::json)) AS e(tenant, key)
  JOIN jobs j ON j.tenant_id = e.tenant::int AND j.key = (e.key COLLATE "C")
 WHERE (SELECT count(*) FROM ins) < json_array_length($2::json)`;

/**
 * Inserts a batch of jobs, skipping keys that exist: the retry of
 * INSERT_BATCH_OPTIMISTIC (whose comment says why that goes first), and the only form used
 * inside a caller's transaction. Returns the created jobs as one aggregated row, then one row per
 * key that existed.
 *
 * Parameters as INSERT_BATCH_OPTIMISTIC's.
 */
export const INSERT_BATCH_ON_CONFLICT = prepared('almanac_insert_batch_on_conflict', `
WITH ins AS (
  INSERT INTO jobs (${INSERT_BATCH_COLUMNS})
  SELECT ${INSERT_BATCH_VALUES} FROM ${INSERT_BATCH_INPUT} WHERE ${INSERT_BATCH_LOCK_WAIT}
  ON CONFLICT (tenant_id, key) DO NOTHING
  RETURNING id, tenant_id, key
)${INSERTED_AND_EXISTING}`);
