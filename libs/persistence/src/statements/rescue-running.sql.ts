/**
 * Running rows whose worker is gone: its heartbeat stopped (claimed by one of $4) or, as a
 * backstop, their lease ran out. Back to queued, or dead when that was the last attempt, each
 * with a `lost` history row. SKIP LOCKED, so replicas take disjoint rows. Returns the rows moved
 * and their new state.
 *
 * $1 timestamptz now · $2 int limit · $3 text the error stored on the row and the `lost` row ·
 * $4 int[] workers found dead.
 */
export const RESCUE_RUNNING_SQL = `WITH gone AS (
         SELECT id FROM jobs
          WHERE state = 'r' AND (lease_until < $1 OR claimed_by = ANY($4::int[]))
          ORDER BY lease_until
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), moved AS (
         UPDATE jobs j
            SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'x' ELSE 'q' END::"char",
                lease_until = NULL,
                claimed_by = NULL,
                finished_at = CASE WHEN j.attempts >= j.max_attempts THEN $1::timestamptz END,
                last_error = $3
           FROM gone g
          WHERE j.id = g.id AND j.state::text = 'r'
          RETURNING j.id, j.run_at, j.tenant_id, j.kind, j.state, j.attempts
       ), lost AS (
         INSERT INTO job_attempts (job_id, attempt, tenant_id, started_at, finished_at, outcome, error)
         SELECT id, attempts, tenant_id, $1, $1, 'lost', $3 FROM moved
         ON CONFLICT (job_id, attempt) DO NOTHING
       )
       SELECT id::text AS id, run_at, tenant_id, kind, state FROM moved`;
