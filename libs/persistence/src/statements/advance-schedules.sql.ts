/**
 * Moves each schedule's cursor to its next nominal run time (null: the schedule has no more).
 *
 * $1 bigint[] schedule ids · $2 timestamptz[] next run times.
 */
export const ADVANCE_SCHEDULES_SQL = `UPDATE schedules s SET next_run_at = v.next
         FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, next)
        WHERE s.id = v.id`;
