/**
 * Running rows whose lease ran out: back to queued, or dead when the expired attempt was the
 * last, with the `lost` history row of a row that goes dead (nobody claims it again to write it).
 * SKIP LOCKED, so replicas take disjoint rows. Returns the rows moved and their new state.
 *
 * $1 timestamptz now · $2 int limit · $3 text the error stored on the row and the `lost` row.
 */
export const RESCUE_EXPIRED_LEASES_SQL = `WITH expired AS (
         SELECT id FROM jobs
          WHERE state = 'r' AND lease_until < $1
          ORDER BY lease_until
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), moved AS (
         UPDATE jobs j
            SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'x' ELSE 'q' END::"char",
                lease_until = NULL,
                finished_at = CASE WHEN j.attempts >= j.max_attempts THEN $1::timestamptz END,
                last_error = $3
           FROM expired e
          WHERE j.id = e.id AND j.state = 'r'
          RETURNING j.id, j.run_at, j.tenant_id, j.kind, j.state, j.attempts
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts, tenant_id, $1, $1, 'lost', $3 FROM moved WHERE state = 'x'
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, run_at, tenant_id, kind, state FROM moved`;
