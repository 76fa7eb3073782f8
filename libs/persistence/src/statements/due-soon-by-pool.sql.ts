/**
 * Unfinished jobs due in [$1, $2) per state code, pool and whole minute from $1 (minute 0 is the first):
 * queued rows through jobs_queued_due, cold rows through jobs_cold_due's hour buckets, each
 * state read up to $3 rows; a kind no worker has registered counts for `default`, where the
 * dispatcher would route it. The promoter turns minutes into the `almanac_jobs_due` windows.
 *
 * $1 timestamptz now · $2 timestamptz the longest window's end · $3 int rows read per state.
 *
 * Cost: one index range per state and a heap visit per due row (for its kind); bounded by $3
 * whatever the table holds (bench/due-soon.ts measures it on 10 M rows).
 */
export const DUE_SOON_BY_POOL_SQL = `WITH due AS (
         (SELECT state, kind, run_at FROM jobs WHERE state = 'q' AND run_at >= $1 AND run_at < $2 LIMIT $3)
         UNION ALL
         (SELECT state, kind, run_at FROM jobs
           WHERE state = 's' AND almanac_hour(run_at) >= almanac_hour($1) AND almanac_hour(run_at) <= almanac_hour($2)
             AND run_at >= $1 AND run_at < $2
           LIMIT $3))
       SELECT d.state, coalesce(k.pool, 'default') AS pool, floor(extract(epoch FROM d.run_at - $1) / 60)::int AS minute, count(*)::int AS n
         FROM due d LEFT JOIN job_kinds k ON k.kind = d.kind
        GROUP BY 1, 2, 3`;
