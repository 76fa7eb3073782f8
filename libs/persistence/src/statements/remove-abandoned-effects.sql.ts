/**
 * Removes up to $3 of one tenant's effect records claimed before $2 and never marked done (a
 * runner died during the call, or its job gave up): no later run took them over, so they would
 * stay forever. Like a done record, one whose last job is not finished is kept: a run may still
 * take it over. Walks job_effects_undone (rare rows: a partial index on done_at IS NULL).
 *
 * $1 int tenant · $2 timestamptz cutoff · $3 int batch size. Returns the records removed.
 */
export const REMOVE_ABANDONED_EFFECTS_SQL = `
WITH doomed AS (
  SELECT e.effect_key FROM job_effects e
   WHERE e.tenant_id = $1 AND e.done_at IS NULL AND e.claimed_at < $2
     AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id AND j.state IN ('s', 'q', 'r'))
   ORDER BY e.claimed_at
   LIMIT $3
   FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM job_effects e USING doomed d WHERE e.tenant_id = $1 AND e.effect_key = d.effect_key AND e.done_at IS NULL RETURNING 1
)
SELECT count(*)::int AS removed FROM gone`;
