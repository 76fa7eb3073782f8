/**
 * Sets aside a job that a shared statement cannot move (Postgres refused a value of its row, so
 * every row batched with it failed: a claim, a promotion): dead, with the reason, no attempt
 * counted. Guarded on scheduled or queued: a row that moved on meanwhile is left alone.
 *
 * $1 bigint id · $2 text the reason (stored as last_error) · $3 timestamptz now.
 */
export const SET_ASIDE_JOB_SQL = `UPDATE jobs SET state = 'x', finished_at = $3, last_error = $2 WHERE id = $1 AND state::text IN ('s', 'q')`;
