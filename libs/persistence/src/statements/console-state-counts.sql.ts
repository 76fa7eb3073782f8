/**
 * A tenant's jobs due in a window ($2 ≤ run_at < $3) by state code, from the newest $4 of them:
 * the console's overview. Cold rows are left out (jobs_tenant_list does not hold them; they are
 * counted by due-soon-counts). Past $4 rows the counts are lower bounds (`read` = $4).
 *
 * $1 int tenant · $2 timestamptz from · $3 timestamptz to · $4 int the most rows read.
 *
 * Cost: one backward walk of jobs_tenant_list that stops after $4 rows, a heap visit each for the
 * state (about 1.5 µs a row, see tenant-due-backlog.sql.ts): bounded by $4 whatever the table holds.
 */
export const CONSOLE_STATE_COUNTS_SQL = `SELECT state, count(*)::int AS n
         FROM (SELECT state FROM jobs
                WHERE tenant_id = $1 AND state <> 's' AND run_at >= $2 AND run_at < $3
                ORDER BY run_at DESC LIMIT $4) AS recent
        GROUP BY state`;
