/**
 * Schedules watched through a time each; with an outcome, that of their latest watched run (and
 * when it was due). One statement for a schedule-watch batch, and the ids it recorded. Only a
 * schedule still watched from where the look started (`since`, to the millisecond the look read)
 * is recorded: if another replica recorded those runs meanwhile (this one stalled past its lease
 * before it could know), or a change moved the watch (a new cron or expectation: watched from
 * its change on), the look is stale and its runs are not counted again.
 *
 * $1 bigint[] ids · $2 timestamptz[] watched through · $3 text[] outcomes (null: none) · $4 timestamptz[] dues (null: none) · $5 timestamptz[] since.
 */
export const RECORD_SCHEDULE_WATCH_SQL = `UPDATE schedules s SET watched_through = w.through,
       last_outcome = coalesce(w.outcome, s.last_outcome), last_outcome_at = coalesce(w.due, s.last_outcome_at)
  FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::timestamptz[], $5::timestamptz[]) AS w(id, through, outcome, due, since)
 WHERE s.id = w.id AND date_trunc('milliseconds', coalesce(s.watched_through, s.created_at)) = w.since
 RETURNING s.id::text AS id`;
