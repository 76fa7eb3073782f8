/**
 * Parked jobs per pool.
 *
 * No parameters.
 */
export const COUNT_BACKLOG_SQL = `SELECT pool, count(*)::int AS n FROM dispatch_backlog GROUP BY pool`;
