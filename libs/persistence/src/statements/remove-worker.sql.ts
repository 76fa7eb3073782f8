/**
 * Deletes a worker's row: at its own shutdown ($2 null), or by the rescue only while its beat is
 * still the one the rescue judged dead ($2, read in ms: a beat since is later), so a worker that
 * beat meanwhile stays.
 *
 * $1 int id · $2 timestamptz its beat as last seen, or null.
 */
export const REMOVE_WORKER_SQL = `DELETE FROM workers
        WHERE id = $1 AND ($2::timestamptz IS NULL OR beat_at < $2::timestamptz + interval '1 millisecond')
       RETURNING id`;
