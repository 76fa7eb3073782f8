import { columns } from './job-view-columns.sql';

/**
 * Cancels a tenant's job that has not started (scheduled or queued), locking the row first so
 * the previous state comes back with the row. No row: not found, or in another state.
 *
 * $1 bigint id · $2 int tenant.
 */
export const CANCEL_JOB_SQL = `WITH old AS (SELECT id, state FROM jobs WHERE id = $1 AND tenant_id = $2 FOR UPDATE)
       UPDATE jobs j SET state = 'c', finished_at = now() FROM old
        WHERE j.id = old.id AND j.state IN ('s', 'q')
       RETURNING old.state AS previous, ${columns('j')}`;
