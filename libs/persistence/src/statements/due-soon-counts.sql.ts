/**
 * How many of a tenant's unfinished jobs come due in [$2, $3): cold rows (state 's', through
 * jobs_cold_tenant's hour buckets), and queued ones among the first $4 of the tenant's non-cold
 * rows in the window (a forward walk of jobs_tenant_list: `state <> 's'` keeps the planner off
 * jobs_queued_due, which holds every tenant's queued rows). Each part reads at most $4 rows;
 * `cold` = $4 or `read` = $4 means the count stopped there.
 *
 * $1 int tenant · $2 timestamptz from · $3 timestamptz to · $4 int cap per part.
 */
export const DUE_SOON_COUNTS_SQL = `WITH hot AS (
         SELECT state FROM jobs
          WHERE tenant_id = $1 AND state <> 's' AND run_at >= $2 AND run_at < $3
          ORDER BY run_at LIMIT $4)
       SELECT (SELECT count(*)::int FROM (SELECT 1 FROM jobs
                 WHERE tenant_id = $1 AND state = 's'
                   AND almanac_hour(run_at) >= almanac_hour($2) AND almanac_hour(run_at) <= almanac_hour($3)
                   AND run_at >= $2 AND run_at < $3
                 LIMIT $4) AS c) AS cold,
              (SELECT count(*)::int FROM hot WHERE state = 'q') AS queued,
              (SELECT count(*)::int FROM hot) AS read`;
