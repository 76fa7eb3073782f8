/**
 * Schedules that expect their runs to start in time and have runs whose expectation has passed
 * since the last look: those with `coalesce(watched_through, created_at)` before now less their
 * expectation, oldest first (schedules_watched), less those the sweep holds back for now.
 * Paused schedules are not watched.
 *
 * $1 timestamptz now · $2 int limit · $3 bigint[] schedules left out.
 */
export const WATCHED_SCHEDULES_SQL = `SELECT id::text AS id, tenant_id, cron, timezone, expect_within_seconds, coalesce(watched_through, created_at) AS since
  FROM schedules
 WHERE expect_within_seconds IS NOT NULL AND NOT paused
   AND coalesce(watched_through, created_at) < $1::timestamptz - expect_within_seconds * interval '1 second'
   AND NOT (id = ANY ($3::bigint[]))
 ORDER BY coalesce(watched_through, created_at)
 LIMIT $2`;

/** Per tenant, its watched schedules whose latest watched run was late, missed or failed (most first). */
export const SCHEDULES_BEHIND_SQL = `SELECT tenant_id, count(*)::int AS n FROM schedules
 WHERE expect_within_seconds IS NOT NULL AND NOT paused AND last_outcome IN ('late', 'missed', 'failed')
 GROUP BY tenant_id ORDER BY n DESC, tenant_id`;
