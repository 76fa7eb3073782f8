/**
 * Which of a tenant's keys name jobs removed by retention, with the day and the state they had.
 * Asked only after an insert failed on a retired key (the jobs_refuse_retired_keys trigger), or
 * before one inside a caller's transaction.
 *
 * $1 int tenant · $2 text[] keys.
 */
export const FIND_RETIRED_KEYS_SQL = `
SELECT r.key, to_char(r.removed_on, 'YYYY-MM-DD') AS removed_on, r.state
  FROM retired_keys r
 WHERE r.tenant_id = $1 AND r.key = ANY ($2::text[])`;
