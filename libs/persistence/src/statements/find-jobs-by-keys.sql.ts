import { JOB_COLUMNS } from '../job-record';

/**
 * The stored jobs among (tenant, key) pairs (any order), as JobRow: one statement for a batch of one tenant's keys or several's.
 *
 * $1 int[] tenants · $2 text[] keys, pairwise.
 */
export const FIND_JOBS_BY_PAIRS_SQL = `SELECT ${JOB_COLUMNS}
  FROM unnest($1::int[], $2::text[]) AS k(tenant_id, key) JOIN jobs j ON j.tenant_id = k.tenant_id AND j.key = (k.key COLLATE "C")`;
