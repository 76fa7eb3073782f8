import { columns } from './job-view-columns.sql';

/**
 * Gives a tenant's dead job more attempts from a new run time: max_attempts becomes attempts +
 * $5 rather than attempts reset, so attempt numbers keep counting; refused past $6 attempts in
 * the job's life. Returns the previous state with the row. No row: not found, not dead, or no
 * attempts left.
 *
 * $1 bigint id · $2 int tenant · $3 timestamptz run time (null: now, the database's, which
 * claims go by: a host's clock ahead of it would delay the job; in whole milliseconds, as a hint
 * carries it, or the demote of a failed enqueue would miss the row) · $4 "char" state ('s' or 'q') ·
 * $5 int extra attempts · $6 int lifetime attempts at most.
 */
export const RETRY_DEAD_JOB_SQL = `WITH old AS (SELECT id, state FROM jobs WHERE id = $1 AND tenant_id = $2 FOR UPDATE)
       UPDATE jobs j SET run_at = coalesce($3::timestamptz, date_trunc('milliseconds', now())), state = $4, finished_at = NULL,
              max_attempts = j.attempts + $5
         FROM old
        WHERE j.id = old.id AND j.state = 'x' AND j.attempts + $5 <= $6
       RETURNING old.state AS previous, ${columns('j')}`;
