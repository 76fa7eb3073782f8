import { columns } from './job-view-columns.sql';

/**
 * Moves a tenant's not-yet-running job (scheduled or queued) to a new run time and tier state,
 * returning the previous state with the row. No row: not found, or in another state.
 *
 * $1 bigint id · $2 int tenant · $3 timestamptz run time · $4 "char" state ('s' or 'q').
 */
export const RESCHEDULE_JOB_SQL = `WITH old AS (SELECT id, state FROM jobs WHERE id = $1 AND tenant_id = $2 FOR UPDATE)
       UPDATE jobs j SET run_at = $3, state = $4 FROM old
        WHERE j.id = old.id AND j.state IN ('s', 'q')
       RETURNING old.state AS previous, ${columns('j')}`;
