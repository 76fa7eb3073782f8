import { COLUMNS } from './job-view-columns.sql';

/**
 * One job of a tenant by id, in the API's view (another tenant's job is not found either).
 *
 * $1 bigint id · $2 int tenant.
 */
export const FIND_JOB_FOR_TENANT_SQL = `SELECT ${COLUMNS} FROM jobs WHERE id = $1 AND tenant_id = $2`;
