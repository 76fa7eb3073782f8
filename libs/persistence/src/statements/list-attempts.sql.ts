/**
 * A page of a tenant's job's attempts, newest first: those numbered below $3 (all when null), at
 * most $4 (none for another tenant's job). Walks job_attempts' primary key (job_id, attempt).
 *
 * $1 bigint job id · $2 int tenant · $3 int2 before this attempt, or null · $4 int page size.
 */
export const LIST_ATTEMPTS_SQL = `SELECT job_id, tenant_id, attempt, started_at, finished_at, outcome, worker_id, error, result
         FROM job_attempts WHERE job_id = $1 AND tenant_id = $2 AND ($3::int2 IS NULL OR attempt < $3)
        ORDER BY attempt DESC
        LIMIT $4`;
