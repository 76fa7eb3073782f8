import { COLUMNS } from './job-view-columns.sql';

/**
 * One job of a tenant by key, in the API's view.
 *
 * $1 int tenant · $2 text key.
 */
export const FIND_JOB_BY_KEY_SQL = `SELECT ${COLUMNS} FROM jobs WHERE tenant_id = $1 AND key = $2`;
