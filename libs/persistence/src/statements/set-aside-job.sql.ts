/**
 * Sets aside a queued job that its claim cannot take (Postgres refused a value of its row, so
 * every claim batched with it failed): dead, with the reason, its attempt not counted. Guarded on
 * `queued`: a row that moved on meanwhile is left alone.
 *
 * $1 bigint id · $2 text the reason (stored as last_error) · $3 timestamptz now.
 */
export const SET_ASIDE_JOB_SQL = `UPDATE jobs SET state = 'x', finished_at = $3, last_error = $2 WHERE id = $1 AND state::text = 'q'`;
