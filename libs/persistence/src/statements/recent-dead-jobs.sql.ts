/**
 * A tenant's newest dead jobs due in [$2, $3), among the newest $4 of its non-cold rows there
 * (the same backward walk of jobs_tenant_list as console-state-counts), at most $5: the
 * console's "dead jobs to look at". Newest first.
 *
 * $1 int tenant · $2 timestamptz from · $3 timestamptz to · $4 int rows walked · $5 int shown.
 */
export const RECENT_DEAD_JOBS_SQL = `SELECT id::text AS id, key, kind, run_at, attempts, max_attempts
         FROM (SELECT id, key, kind, run_at, attempts, max_attempts, state FROM jobs
                WHERE tenant_id = $1 AND state <> 's' AND run_at >= $2 AND run_at < $3
                ORDER BY run_at DESC LIMIT $4) AS w
        WHERE state = 'x'
        ORDER BY run_at DESC
        LIMIT $5`;
