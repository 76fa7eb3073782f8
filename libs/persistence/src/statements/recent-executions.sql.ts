/** Attempts read per job, newest first: a job retried for days has thousands of them. */
export const RECENT_ATTEMPTS_PER_JOB = 20;

/**
 * A tenant's executions per minute since $2, and the start lag (start − run_at) of first
 * attempts at p50 and p95 per minute: the console's sparklines, from the tenant's own rows
 * rather than Prometheus. Read through the jobs due in [$2, $3) (the newest $4 of them, a
 * backward walk of jobs_tenant_list) and, for each, its newest RECENT_ATTEMPTS_PER_JOB attempts
 * by primary key backwards (LATERAL: job_attempts has no index on started_at, and a hash join
 * would scan it whole), so a read visits at most $4 × RECENT_ATTEMPTS_PER_JOB attempts. A retry
 * moves a job's run_at to its backoff time, so lag counts only jobs run once (attempts = 1).
 * `jobs_read` = $4 means older jobs in the window were not read; `attempts_cut` (in a minute's
 * row) means a job had more attempts in the window than were counted: one more is read per job
 * to tell, and attempts start in attempt order, so when that one started before $2 every older
 * one did too. A minute holding only such extra attempts comes back with 0 executions.
 *
 * $1 int tenant · $2 timestamptz from · $3 timestamptz to · $4 int the most jobs read.
 */
export const RECENT_EXECUTIONS_SQL = `WITH j AS (
         SELECT id, run_at, attempts FROM jobs
          WHERE tenant_id = $1 AND state <> 's' AND run_at >= $2 AND run_at < $3
          ORDER BY run_at DESC LIMIT $4)
       SELECT date_trunc('minute', a.started_at) AS minute,
              (count(*) FILTER (WHERE a.nth <= ${RECENT_ATTEMPTS_PER_JOB}))::int AS executions,
              (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - j.run_at))
                 FILTER (WHERE a.attempt = 1 AND j.attempts = 1) * 1000)::float8 AS lag_p50_ms,
              (percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - j.run_at))
                 FILTER (WHERE a.attempt = 1 AND j.attempts = 1) * 1000)::float8 AS lag_p95_ms,
              (SELECT count(*)::int FROM j) AS jobs_read,
              bool_or(a.nth > ${RECENT_ATTEMPTS_PER_JOB}) AS attempts_cut
         FROM j CROSS JOIN LATERAL (
                SELECT started_at, attempt, row_number() OVER (ORDER BY attempt DESC) AS nth
                  FROM job_attempts WHERE job_id = j.id
                 ORDER BY attempt DESC LIMIT ${RECENT_ATTEMPTS_PER_JOB + 1}) AS a
        WHERE a.started_at >= $2
        GROUP BY 1
        ORDER BY 1`;
