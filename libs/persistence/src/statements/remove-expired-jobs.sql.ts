import { resultDigest } from './result-digest.sql';

/** The expired rows of one tenant: finished (succeeded, dead, cancelled), due and ended before $2. */
const EXPIRED_JOBS_WHERE = `tenant_id = $1 AND state <> 's' AND run_at < $2 AND state IN ('d', 'x', 'c') AND finished_at < $2`;

/** Where a walk over the tenant's rows starts ('-infinity': its oldest), as the parameter `$n`. */
const walkedFrom = (n: number) => `run_at >= $${n}::timestamptz`;

/**
 * Removes up to $3 of one tenant's finished jobs whose run time and finish are both before $2,
 * oldest run time first, with their attempts, and retires their keys unless the tenant frees
 * them, with how each ended and its result's digest, on the removal day $4 (the database's UTC
 * day, read once a run by the sweep; the reservation's last: the tenant's days after it). One statement,
 * one short transaction: rows another transaction holds (a retry of a dead job) are skipped, and
 * FOR UPDATE re-checks the state of a row that changed. A replay of a key racing this statement
 * is refused by the jobs_refuse_retired_keys trigger.
 *
 * Walks jobs_tenant_list (tenant_id, run_at, id) WHERE state <> 's' from $8, where the sweep's
 * walk got to: the cost is the batch plus the unfinished or late-finished rows it steps over (a
 * backlog held back by a limit can be millions: walked from the tenant's oldest entry, every
 * batch stepped over all of them again). A cancelled job whose run time is still ahead waits
 * for it: it is removed once both times are past the cutoff.
 *
 * Whether keys are freed, and how long they stay reserved, are read from the tenant's row by the
 * statement itself: a run lasts many batches, and a tenant switched to reserved keys mid-run had
 * the rest of the run's keys freed (replays then made second jobs). A switch committed while a
 * batch runs applies from the next (the row is read, not locked: the stored-bytes pass updates
 * tenant rows every second and would wait on each batch).
 *
 * $1 int tenant · $2 timestamptz cutoff · $3 int batch size · $4 date removal day · $5 int days
 * the keys stay reserved after the removal day when the tenant's row sets none (null: forever) ·
 * $6 bigint[] only these rows (null: any) · $7 bigint[] never these (rows a removal could not
 * take: the sweep set them aside) · $8 timestamptz run times from (inclusive; '-infinity': all).
 * Returns the rows removed, the run time of the last one, and whether their keys were freed.
 */
export const REMOVE_EXPIRED_JOBS_SQL = `
WITH keys AS (
  SELECT frees_keys, CASE WHEN keys_reserved_forever THEN NULL ELSE coalesce(ceil(key_reservation_seconds / 86400.0)::int, $5::int) END AS days
    FROM tenants WHERE id = $1
), doomed AS (
  SELECT id FROM jobs
   WHERE ${EXPIRED_JOBS_WHERE} AND ${walkedFrom(8)} AND ($6::bigint[] IS NULL OR id = ANY ($6::bigint[])) AND NOT (id = ANY ($7::bigint[]))
   ORDER BY run_at, id
   LIMIT $3
   FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM jobs j USING doomed d WHERE j.id = d.id RETURNING j.id, j.key, j.state, j.run_at, ${resultDigest('j.result')} AS result_digest
), attempts AS (
  DELETE FROM job_attempts a USING gone g WHERE a.job_id = g.id
), retired AS (
  INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through, result_digest)
  SELECT $1::int, g.key, $4::date, g.state, $4::date + k.days, g.result_digest FROM gone g, keys k WHERE NOT k.frees_keys
  ON CONFLICT (tenant_id, key) DO UPDATE
    SET removed_on = EXCLUDED.removed_on, state = EXCLUDED.state, reserved_through = EXCLUDED.reserved_through, result_digest = EXCLUDED.result_digest
)
SELECT count(*)::int AS removed, max(run_at) AS last_run_at, (SELECT frees_keys FROM keys) AS keys_freed FROM gone`;

/** The ids REMOVE_EXPIRED_JOBS_SQL would take next ($1 … $3 as there, $4 its $7, $5 its $8): what to split when it failed. */
export const EXPIRED_JOB_IDS_SQL = `SELECT id::text AS id FROM jobs WHERE ${EXPIRED_JOBS_WHERE} AND ${walkedFrom(5)} AND NOT (id = ANY ($4::bigint[])) ORDER BY jobs.run_at, jobs.id LIMIT $3`; // jobs.id: the bare name is the text column

/** The run time of the oldest row REMOVE_EXPIRED_JOBS_SQL would take ($1, $2 as there, $3 its $7, $4 its $8): how far behind it is. */
export const OLDEST_EXPIRED_SQL = `SELECT run_at FROM jobs WHERE ${EXPIRED_JOBS_WHERE} AND ${walkedFrom(4)} AND NOT (id = ANY ($3::bigint[])) ORDER BY run_at LIMIT 1`;
