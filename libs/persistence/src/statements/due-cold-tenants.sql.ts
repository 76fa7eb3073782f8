/**
 * Tenants with a scheduled row in an hour bucket ≤ hour($1): the tenants fair promotion shares
 * each batch between (PROMOTE_COLD_FAIR_SQL). A loose index scan of
 * jobs_cold_tenant (tenant_id, almanac_hour(run_at)): one index descent per tenant that has cold
 * rows at all, which also reads that tenant's earliest hour, so it costs the same whatever a
 * tenant holds. Nothing due at all (the overdue sweep's usual case) is one probe of jobs_cold_due:
 * the earliest bucket, by min(), which is always read from the index's first entry. (An EXISTS
 * here was planned as a sequential scan expecting an early match: the idle overdue sweep took
 * 150 ms at 1 M rows and 1.4 s at 10 M, bench/promote.ts, 2026-12-02.)
 *
 * $1 timestamptz horizon.
 */
export const DUE_COLD_TENANTS_SQL = `WITH RECURSIVE t AS (
    (SELECT tenant_id, almanac_hour(run_at) AS h FROM jobs
      WHERE state = 's'
        AND (SELECT min(almanac_hour(run_at)) FROM jobs WHERE state = 's') <= almanac_hour($1::timestamptz)
      ORDER BY tenant_id, almanac_hour(run_at) LIMIT 1)
    UNION ALL
    SELECT n.tenant_id, n.h FROM t CROSS JOIN LATERAL (
      SELECT tenant_id, almanac_hour(run_at) AS h FROM jobs
       WHERE state = 's' AND tenant_id > t.tenant_id
       ORDER BY tenant_id, almanac_hour(run_at) LIMIT 1) n
  )
  SELECT tenant_id FROM t WHERE h <= almanac_hour($1::timestamptz)`;
