/** A retired key still reserved on the UTC day of the statement (its `reserved_through` not passed). */
export const RESERVED_NOW = `(reserved_through IS NULL OR reserved_through >= (statement_timestamp() AT TIME ZONE 'UTC')::date)`;

/**
 * Which of a tenant's keys name jobs removed by retention and are still reserved, with the day,
 * the state they had, the last day of the reservation (null: forever) and their result's digest. Asked only after an
 * insert failed on a retired key (the jobs_refuse_retired_keys trigger), or before one inside a
 * caller's transaction.
 *
 * $1 int tenant · $2 text[] keys.
 */
export const FIND_RETIRED_KEYS_SQL = `
SELECT r.key, to_char(r.removed_on, 'YYYY-MM-DD') AS removed_on, r.state, to_char(r.reserved_through, 'YYYY-MM-DD') AS reserved_through,
       encode(r.result_digest, 'hex') AS result_digest
  FROM retired_keys r
 WHERE r.tenant_id = $1 AND r.key = ANY ($2::text[]) AND ${RESERVED_NOW}`;

/**
 * FIND_RETIRED_KEYS_SQL over (tenant, key) pairs: one statement for a batch of several tenants'
 * keys (the API's shared group commit), not one a tenant.
 *
 * $1 int[] tenants · $2 text[] keys, pairwise.
 */
export const FIND_RETIRED_PAIRS_SQL = `
SELECT r.tenant_id, r.key, to_char(r.removed_on, 'YYYY-MM-DD') AS removed_on, r.state, to_char(r.reserved_through, 'YYYY-MM-DD') AS reserved_through,
       encode(r.result_digest, 'hex') AS result_digest
  FROM unnest($1::int[], $2::text[]) AS k(tenant_id, key)
  JOIN retired_keys r ON r.tenant_id = k.tenant_id AND r.key = (k.key COLLATE "C")
 WHERE ${RESERVED_NOW}`;
