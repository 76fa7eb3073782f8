/**
 * The filter's match, written as the operation's chunks: the tenant's scheduled and queued jobs
 * that fit it, in id order, `$9` ids per chunk. Each state reads its own partial index
 * (jobs_cold_tenant by hour for scheduled rows, the tenant's listing index for queued ones); the
 * hour bounds beside the run_at bounds let the cold index range-scan. Reads only: no job row is
 * locked. At most `$8` ids (the caller asks for its limit + 1 to see that it was passed).
 *
 * $1 bigint operation · $2 int tenant · $3 text[] state codes · $4 text kind · $5 text key LIKE
 * pattern · $6 timestamptz from · $7 timestamptz to (each of $4-$7 null when absent) · $8 int
 * limit · $9 int ids per chunk. Returns one row per chunk with its size.
 */
export const MATCH_BULK_OPERATION_SQL = `WITH matched AS (
    (SELECT id FROM jobs
      WHERE tenant_id = $2 AND state = 's' AND 's' = ANY($3::text[])
        AND ($4::text IS NULL OR kind = $4) AND ($5::text IS NULL OR key LIKE $5)
        AND ($6::timestamptz IS NULL OR (almanac_hour(run_at) >= almanac_hour($6) AND run_at >= $6))
        AND ($7::timestamptz IS NULL OR (almanac_hour(run_at) <= almanac_hour($7) AND run_at < $7))
    UNION ALL
     SELECT id FROM jobs
      WHERE tenant_id = $2 AND state = 'q' AND 'q' = ANY($3::text[])
        AND ($4::text IS NULL OR kind = $4) AND ($5::text IS NULL OR key LIKE $5)
        AND ($6::timestamptz IS NULL OR run_at >= $6) AND ($7::timestamptz IS NULL OR run_at < $7))
    LIMIT $8
  ), numbered AS (
    SELECT id, (row_number() OVER (ORDER BY id) - 1) / $9 AS chunk FROM matched
  )
  INSERT INTO bulk_operation_chunks (operation_id, chunk, job_ids)
  SELECT $1, chunk, array_agg(id ORDER BY id) FROM numbered GROUP BY chunk
  RETURNING cardinality(job_ids) AS n`;

/**
 * Bounds the match transaction's lock waits below its statement timeout (at half of it), unless
 * the lock timeout already is (ALMANAC_PG_LOCK_TIMEOUT_MS may be 0, or as long): a match that
 * waited on a lock (a migration's, an operator's LOCK TABLE) then fails with a lock timeout
 * (55P03), which passes, not a statement timeout, which says its filter reads too many rows
 * (the sweep's failureLasts). Without a statement timeout, nothing to do.
 */
export const BOUND_MATCH_LOCK_WAITS_SQL = `SELECT set_config('lock_timeout', greatest(st.setting::bigint / 2, 1)::text, true)
  FROM pg_settings st, pg_settings lt
 WHERE st.name = 'statement_timeout' AND lt.name = 'lock_timeout' AND st.setting::bigint > 0
   AND (lt.setting::bigint = 0 OR lt.setting::bigint >= st.setting::bigint)`;
