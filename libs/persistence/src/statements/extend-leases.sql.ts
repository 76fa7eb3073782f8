/**
 * Pushes the lease of running attempts out (the worker's heartbeat), guarded by state and attempt.
 * Returns the ids still held.
 *
 * $1 bigint[] ids · $2 int2[] attempts · $3 timestamptz the new lease end.
 */
export const EXTEND_LEASES_SQL = `UPDATE jobs j SET lease_until = $3
         FROM unnest($1::bigint[], $2::int2[]) AS t(id, attempt)
        WHERE j.id = t.id AND j.state = 'r' AND j.attempts = t.attempt
       RETURNING j.id::text AS id`;
