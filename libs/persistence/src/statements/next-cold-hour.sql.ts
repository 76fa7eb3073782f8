/**
 * A tenant's first hour bucket holding a scheduled row at or after $2 (any, when null), as UTC
 * text, through jobs_cold_tenant (tenant_id, almanac_hour(run_at)).
 *
 * $1 int tenant · $2 timestamptz from, or null.
 */
export const NEXT_COLD_HOUR_SQL = `SELECT to_char(almanac_hour(run_at), 'YYYY-MM-DD"T"HH24:00:00"Z"') AS h FROM jobs
        WHERE state = 's' AND tenant_id = $1 AND almanac_hour(run_at) >= almanac_hour(coalesce($2::timestamptz, '-infinity'))
        ORDER BY tenant_id, almanac_hour(run_at) LIMIT 1`;
