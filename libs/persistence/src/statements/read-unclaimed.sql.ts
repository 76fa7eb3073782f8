/**
 * The state, run time, tenant and kind of each id (nulls for a missing row): read after a claim
 * that returned fewer rows, to say why the others were not claimed.
 *
 * $1 bigint[] ids.
 */
export const READ_UNCLAIMED_SQL = `SELECT t.id::text AS id, j.state, j.run_at, j.tenant_id, j.kind
         FROM unnest($1::bigint[]) AS t(id) LEFT JOIN jobs j ON j.id = t.id`;
