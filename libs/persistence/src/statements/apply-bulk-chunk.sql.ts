/**
 * "This operation ($1) is being matched or a chunk of it applied": one replica at a time; another
 * skips it. It is not the operation row's lock, so a cancel never waits on a match or a chunk in
 * flight. The key is the whole id, negated: the single-key space's other locks (migrations) are
 * positive, and an id cut to the two-key form's 32 bits was shared by operations made 2^19 ms apart.
 */
export const TAKE_BULK_STEP_LOCK = `pg_try_advisory_xact_lock(-($1::bigint))`;

/**
 * Applies chunk `$2` of running operation `$1` in one statement, so the jobs it changes, the
 * chunk's removal and the operation's progress commit together: a crash resumes at the first
 * chunk not applied and counts nothing twice. Guarded three ways: the operation must be at this
 * chunk and its step lock free (another replica applying it leaves nothing to do), and the
 * chunk row is removed once (a replica that read the operation before another applied the
 * chunk removes nothing, so changes nothing, and the progress is guarded on `next_chunk` again);
 * only the jobs still scheduled or queued are locked, in id order (as the chunk holds them), and
 * change (one that started meanwhile is skipped, never changed under its handler: FOR UPDATE
 * re-checks the state of a row it waited for); and the jobs must be the operation's tenant's.
 * Running and finished rows are not locked: their claims, lease renewals and completions do not
 * wait for the chunk, nor deadlock with it. Every id of the chunk not changed counts as skipped.
 * The operation row is written last, so a cancel does not wait on the chunk's row locks; one
 * that lands meanwhile stays cancelled, and this chunk, counted, is the last.
 *
 * Returns the operation's new state, the chunk's changed and skipped counts and the rows now
 * queued as {id, runAt, kind} (a reschedule into the hot horizon: the caller gives them hints at
 * their new times; their old hints are stale, and the claim drops them). No row: nothing was
 * applied (another replica applied it, or the operation ended).
 */
function applyChunk(change: string): string {
  return `WITH op AS (
    SELECT id, tenant_id, change FROM bulk_operations WHERE id = $1 AND state = 'running' AND next_chunk = $2 AND ${TAKE_BULK_STEP_LOCK}
  ), chunk AS (
    DELETE FROM bulk_operation_chunks c USING op WHERE c.operation_id = op.id AND c.chunk = $2 RETURNING c.job_ids
  ), locked AS (
    SELECT j.id, j.state, j.run_at FROM jobs j JOIN op ON j.tenant_id = op.tenant_id
     WHERE j.id = ANY((SELECT job_ids FROM chunk)::bigint[]) AND j.state IN ('s', 'q') ORDER BY j.id FOR UPDATE OF j
  ), changed AS (${change})
  UPDATE bulk_operations o
     SET next_chunk = o.next_chunk + 1, failures = 0, lasting_failures = 0, last_failure_at = NULL,
         changed = o.changed + (SELECT count(*) FROM changed),
         skipped = o.skipped + coalesce((SELECT cardinality(job_ids) FROM chunk), 0) - (SELECT count(*) FROM changed),
         state = CASE WHEN o.state <> 'running' THEN o.state WHEN o.next_chunk + 1 >= o.chunks THEN 'done' ELSE 'running' END,
         finished_at = CASE WHEN o.state <> 'running' THEN o.finished_at WHEN o.next_chunk + 1 >= o.chunks THEN now() END
    FROM op WHERE o.id = op.id AND o.next_chunk = $2 AND EXISTS (SELECT 1 FROM chunk)
  RETURNING o.state, (SELECT count(*) FROM changed)::int AS changed,
    (coalesce((SELECT cardinality(job_ids) FROM chunk), 0) - (SELECT count(*) FROM changed))::int AS skipped,
    (SELECT coalesce(json_agg(json_build_object('id', c.id::text, 'runAt', c.run_at, 'kind', c.kind)), '[]') FROM changed c WHERE c.state = 'q') AS hot`;
}

/** Cancels the chunk's unstarted jobs. $1 bigint operation · $2 int chunk. */
export const APPLY_BULK_CANCEL_SQL = applyChunk(`
    UPDATE jobs j SET state = 'c', finished_at = now() FROM locked l
     WHERE j.id = l.id
    RETURNING j.id, j.state, j.run_at, j.kind, l.state AS previous`);

/**
 * Moves the chunk's unstarted jobs to the operation's `change.runAt`, or by its
 * `change.shiftBySeconds`; each becomes queued if its new time is within the hot horizon (≤ $3),
 * scheduled otherwise (the tier rule, tierFor). A shift that would take a job outside the run
 * times the API accepts (1970 to 9999) leaves it as it is, counted as skipped. $1 bigint
 * operation · $2 int chunk · $3 timestamptz end of the hot horizon.
 */
export const APPLY_BULK_RESCHEDULE_SQL = applyChunk(`
    UPDATE jobs j SET run_at = m.run_at, state = CASE WHEN m.run_at <= $3::timestamptz THEN 'q' ELSE 's' END
      FROM (SELECT l.id, l.state AS previous, CASE WHEN op.change ? 'runAt' THEN (op.change->>'runAt')::timestamptz
                              ELSE l.run_at + (op.change->>'shiftBySeconds')::float8 * interval '1 second' END AS run_at
              FROM locked l CROSS JOIN op) m
     WHERE j.id = m.id AND m.run_at BETWEEN '1970-01-01T00:00:00Z' AND '9999-12-31T23:59:59Z'
    RETURNING j.id, j.state, j.run_at, j.kind, m.previous`);
