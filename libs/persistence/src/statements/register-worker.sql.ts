/**
 * A worker process announces itself: its row in `workers`, beating from now. Returns its id and the database's clock.
 *
 * $1 text name · $2 text[] pools · $3 int concurrency.
 */
export const REGISTER_WORKER_SQL = `INSERT INTO workers (name, pools, concurrency) VALUES ($1, $2, $3) RETURNING id, now() AS db_now`;
