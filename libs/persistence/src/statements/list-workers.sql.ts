/**
 * Every worker row, with the database's now (also when there is none): what the rescue watches
 * and the gauges sum, judged by one clock.
 */
export const LIST_WORKERS_SQL = `SELECT n.db_now, w.id, w.name, w.pools, w.concurrency, w.running, w.leaving, w.beat_at
         FROM (SELECT now() AS db_now) n LEFT JOIN workers w ON true
        ORDER BY w.id`;
