/**
 * A schedule watched through $2; with $3, the outcome of its latest watched run (due at $4).
 *
 * $1 bigint id · $2 timestamptz watched through · $3 text outcome or null · $4 timestamptz due or null.
 */
export const RECORD_SCHEDULE_WATCH_SQL = `UPDATE schedules SET watched_through = $2,
       last_outcome = coalesce($3, last_outcome), last_outcome_at = coalesce($4, last_outcome_at)
 WHERE id = $1`;
