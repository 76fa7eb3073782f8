import { JOB_COLUMNS } from '../job-record';

/**
 * A tenant's stored jobs among the given keys (any order), as JobRow.
 *
 * $1 int tenant · $2 text[] keys.
 */
export const FIND_JOBS_BY_KEYS_SQL = `SELECT ${JOB_COLUMNS} FROM unnest($2::text[]) AS k(key) JOIN jobs j ON j.tenant_id = $1 AND j.key = (k.key COLLATE "C")`;
