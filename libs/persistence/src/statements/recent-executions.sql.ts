/**
 * A tenant's executions per minute since $2, and the start lag (start − run_at) of first
 * attempts at p50 and p95 per minute: the console's sparklines, from the tenant's own rows
 * rather than Prometheus. Read through the jobs due in [$2, $3) (the newest $4 of them, a
 * backward walk of jobs_tenant_list) and their attempts by primary key (LATERAL: job_attempts
 * has no index on started_at, and a hash join would scan it whole). A retry moves a job's
 * run_at to its backoff time, so lag counts only jobs run once (attempts = 1). `jobs_read` = $4
 * means older jobs in the window were not read.
 *
 * $1 int tenant · $2 timestamptz from · $3 timestamptz to · $4 int the most jobs read.
 */
export const RECENT_EXECUTIONS_SQL = `WITH j AS (
         SELECT id, run_at, attempts FROM jobs
          WHERE tenant_id = $1 AND state <> 's' AND run_at >= $2 AND run_at < $3
          ORDER BY run_at DESC LIMIT $4)
       SELECT date_trunc('minute', a.started_at) AS minute,
              count(*)::int AS executions,
              (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - j.run_at))
                 FILTER (WHERE a.attempt = 1 AND j.attempts = 1) * 1000)::float8 AS lag_p50_ms,
              (percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - j.run_at))
                 FILTER (WHERE a.attempt = 1 AND j.attempts = 1) * 1000)::float8 AS lag_p95_ms,
              (SELECT count(*)::int FROM j) AS jobs_read
         FROM j CROSS JOIN LATERAL (SELECT started_at, attempt FROM job_attempts WHERE job_id = j.id) AS a
        WHERE a.started_at >= $2
        GROUP BY 1
        ORDER BY 1`;
