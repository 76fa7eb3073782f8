/**
 * Parked jobs per pool, tenant and kind: the backlog gauges, and how a dispatcher learns which
 * flows another replica parked.
 *
 * No parameters.
 */
export const COUNT_BACKLOG_SQL = `SELECT pool, tenant_id, kind, count(*)::int AS n FROM dispatch_backlog GROUP BY pool, tenant_id, kind`;
