/**
 * A worker's heartbeat, by the database's clock, with how many handlers it runs in each of its
 * pools and whether it is leaving (draining: it takes nothing new). Returns the database's clock
 * (the worker sets its own by it), or nothing when the row is gone (the rescue took this worker for dead).
 *
 * $1 int id · $2 int[] running, per pool in the order of `pools` · $3 bool leaving.
 */
export const BEAT_WORKER_SQL = `UPDATE workers SET beat_at = now(), running = $2::int[], leaving = $3 WHERE id = $1 RETURNING now() AS db_now`;
