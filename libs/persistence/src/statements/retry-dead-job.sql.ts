import { columns } from './job-view-columns.sql';

/**
 * Gives a tenant's dead job more attempts from a new run time: max_attempts is raised (capped at
 * the smallint maximum) rather than attempts reset, so attempt numbers keep counting. Returns the
 * previous state with the row. No row: not found, or not dead.
 *
 * $1 bigint id · $2 int tenant · $3 timestamptz run time · $4 "char" state ('s' or 'q') ·
 * $5 int extra attempts.
 */
export const RETRY_DEAD_JOB_SQL = `WITH old AS (SELECT id, state FROM jobs WHERE id = $1 AND tenant_id = $2 FOR UPDATE)
       UPDATE jobs j SET run_at = $3, state = $4, finished_at = NULL,
              max_attempts = LEAST(j.attempts + $5, 32767)
         FROM old
        WHERE j.id = old.id AND j.state = 'x'
       RETURNING old.state AS previous, ${columns('j')}`;
