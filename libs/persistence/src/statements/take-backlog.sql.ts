/**
 * Takes (deletes and returns) up to $2 of a pool's parked jobs, oldest run time first. SKIP
 * LOCKED: two dispatchers refilling the same pool take disjoint sets.
 *
 * $1 text pool · $2 int limit.
 */
export const TAKE_BACKLOG_SQL = `DELETE FROM dispatch_backlog b
        WHERE b.job_id IN (SELECT job_id FROM dispatch_backlog WHERE pool = $1
                            ORDER BY run_at, job_id LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING b.job_id::text AS id, b.run_at`;
