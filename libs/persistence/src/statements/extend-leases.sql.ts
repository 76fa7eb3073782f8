/**
 * Pushes the lease of running attempts out (the worker's heartbeat), guarded by state and
 * attempt, and writes what their handlers reported since (`ctx.progress`; null: nothing new).
 * Returns the attempts still held (id and attempt: a worker can run two attempts of one row).
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 timestamptz the new lease end · $4 text[] progress
 * as JSON, or null.
 */
export const EXTEND_LEASES_SQL = `UPDATE jobs j SET lease_until = $3, progress = COALESCE(t.progress::jsonb, j.progress)
         FROM unnest($1::bigint[], $2::int2[], $4::text[]) AS t(id, attempt, progress)
        WHERE j.id = t.id AND j.state::text = 'r' AND j.attempts = t.attempt
       RETURNING j.id::text AS id, j.attempts AS attempt`;
