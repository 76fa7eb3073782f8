/**
 * Parked jobs per pool and tenant: the backlog gauges, and how a dispatcher learns which tenants
 * another replica parked.
 *
 * No parameters.
 */
export const COUNT_BACKLOG_SQL = `SELECT pool, tenant_id, count(*)::int AS n FROM dispatch_backlog GROUP BY pool, tenant_id`;
