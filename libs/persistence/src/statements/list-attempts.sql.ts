/**
 * A tenant's job's attempts, oldest first (none for another tenant's job).
 *
 * $1 bigint job id · $2 int tenant.
 */
export const LIST_ATTEMPTS_SQL = `SELECT job_id, tenant_id, attempt, started_at, finished_at, outcome, worker_id, error, result
         FROM job_attempts WHERE job_id = $1 AND tenant_id = $2 ORDER BY attempt`;
