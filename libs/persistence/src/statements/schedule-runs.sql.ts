/**
 * A schedule's runs: the tenant's occurrence rows among the given keys (`schedule:<id>:<nominal>`,
 * the nominal instants the caller computed from the cron), each with when its first attempt
 * started. One probe of jobs_tenant_key per key, and of job_attempts' key per row.
 *
 * $1 int tenant · $2 text[] keys.
 */
export const SCHEDULE_RUNS_SQL = `SELECT k.key, j.id::text AS id, j.state, j.attempts, j.finished_at, j.result, j.last_error, a.started_at
  FROM unnest($2::text[]) AS k(key)
  JOIN jobs j ON j.tenant_id = $1 AND j.key = (k.key COLLATE "C")
  LEFT JOIN job_attempts a ON a.job_id = j.id AND a.attempt = 1`;
