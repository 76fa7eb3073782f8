/**
 * Schedules watched through a time each; with an outcome, that of their latest watched run (and
 * when it was due). One statement for a schedule-watch batch. A schedule whose watch a change
 * moved past that time meanwhile (a new cron or expectation: watched from its change on) is left
 * as it is: moved back, its new timing's earlier instants would be reported missed.
 *
 * $1 bigint[] ids · $2 timestamptz[] watched through · $3 text[] outcomes (null: none) · $4 timestamptz[] dues (null: none).
 */
export const RECORD_SCHEDULE_WATCH_SQL = `UPDATE schedules s SET watched_through = w.through,
       last_outcome = coalesce(w.outcome, s.last_outcome), last_outcome_at = coalesce(w.due, s.last_outcome_at)
  FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::timestamptz[]) AS w(id, through, outcome, due)
 WHERE s.id = w.id AND (s.watched_through IS NULL OR s.watched_through <= w.through)`;
