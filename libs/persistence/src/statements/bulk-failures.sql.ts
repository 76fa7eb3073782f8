import { BULK_OPERATION_COLUMNS } from './create-bulk-operation.sql';

/** A failed bulk step's next try waits this long per failure in a row... */
const RETRY_STEP_MS = 10_000;
/** ...and at most this long. */
const RETRY_MAX_MS = 300_000;
/**
 * An open operation that may be tried now: no failure, or its back-off is over (Postgres' clock,
 * the same for every replica). A match that times out, a chunk that meets a held lock, is not
 * tried again at once by every run: each try cost the run up to the statement or lock timeout.
 */
const DUE = `(last_failure_at IS NULL
  OR last_failure_at <= now() - least(failures * ${RETRY_STEP_MS}, ${RETRY_MAX_MS}) * interval '1 millisecond')`;

/**
 * Pending and running operations that are due, fair between tenants: every tenant's oldest, then
 * every tenant's second, up to `$2`, each round starting after tenant `$3`; at most `$1`.
 */
export const OPEN_BULK_OPERATIONS_SQL = `SELECT ${BULK_OPERATION_COLUMNS} FROM (
    SELECT *, row_number() OVER (PARTITION BY tenant_id ORDER BY id) AS rank FROM bulk_operations
     WHERE state IN ('pending', 'running') AND ${DUE}
  ) bulk_operations
  WHERE rank <= $2 ORDER BY rank, tenant_id <= $3, tenant_id LIMIT $1`;

/**
 * Counts a failed try of open operation `$1`, if it was due (replicas that meet the same cause
 * back to back count it once): `failures` and `last_failure_at` always, `lasting_failures` up
 * when `$2` (its cause recurs) and back to 0 otherwise. Returns whether this call counted, and
 * the counts either way (a replica whose UPDATE waited on another's re-checks the row and counts
 * nothing; the SELECT then reads the counts from before that other's, its snapshot, one short at
 * most); no row once it ended. Only the call that counted acts on the counts, so replicas do not
 * both fail the operation.
 */
export const COUNT_BULK_FAILURE_SQL = `WITH counted AS (
    UPDATE bulk_operations SET failures = failures + 1, last_failure_at = now(),
           lasting_failures = CASE WHEN $2 THEN lasting_failures + 1 ELSE 0 END
     WHERE id = $1 AND state IN ('pending', 'running') AND ${DUE}
    RETURNING failures, lasting_failures AS lasting
  )
  SELECT true AS counted, failures, lasting FROM counted
  UNION ALL
  SELECT false, failures, lasting_failures FROM bulk_operations
   WHERE id = $1 AND state IN ('pending', 'running') AND NOT EXISTS (SELECT 1 FROM counted)`;

/**
 * Removes the chunks of every operation that has ended, as each bulk sweep run begins. A cancel
 * skips the chunk row a chunk in flight is removing (it never waits on the sweep); if that chunk
 * then fails, or its promoter dies or loses Postgres, its rollback brings the row back, of an
 * operation no step reads again. A chunk row a chunk in flight holds is skipped (that chunk
 * removes it, or the next run does). Reads the few open operations' chunks besides.
 */
export const REMOVE_CHUNKS_OF_ENDED_SQL = `DELETE FROM bulk_operation_chunks
  WHERE (operation_id, chunk) IN (
    SELECT c.operation_id, c.chunk FROM bulk_operation_chunks c JOIN bulk_operations o ON o.id = c.operation_id
     WHERE o.state NOT IN ('pending', 'running')
       FOR UPDATE OF c SKIP LOCKED)`;
