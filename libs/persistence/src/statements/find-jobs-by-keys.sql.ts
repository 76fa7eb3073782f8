import { JOB_COLUMNS } from '../job-record';

/**
 * A tenant's stored jobs among the given keys (any order), as JobRow.
 *
 * $1 int tenant · $2 text[] keys.
 */
export const FIND_JOBS_BY_KEYS_SQL = `SELECT ${JOB_COLUMNS} FROM unnest($2::text[]) AS k(key) JOIN jobs j ON j.tenant_id = $1 AND j.key = (k.key COLLATE "C")`;

/**
 * FIND_JOBS_BY_KEYS_SQL over (tenant, key) pairs: one statement for a batch of several tenants' keys.
 *
 * $1 int[] tenants · $2 text[] keys, pairwise.
 */
export const FIND_JOBS_BY_PAIRS_SQL = `SELECT ${JOB_COLUMNS}
  FROM unnest($1::int[], $2::text[]) AS k(tenant_id, key) JOIN jobs j ON j.tenant_id = k.tenant_id AND j.key = (k.key COLLATE "C")`;
