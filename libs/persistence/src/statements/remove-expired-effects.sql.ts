/**
 * Removes up to $3 of one tenant's effect records done before $2 (ctx.effects.once: a record that
 * keeps a second run from repeating an SMTP send). They expire by their own age, not with a job:
 * an effect key may be shared by several jobs, and the record's `job_id` is only the last one. A
 * job that is not finished keeps the records it last touched. Walks job_effects_done.
 *
 * $1 int tenant · $2 timestamptz cutoff · $3 int batch size. Returns the records removed.
 */
export const REMOVE_EXPIRED_EFFECTS_SQL = `
WITH doomed AS (
  SELECT e.effect_key FROM job_effects e
   WHERE e.tenant_id = $1 AND e.done_at < $2
     AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id AND j.state IN ('s', 'q', 'r'))
   ORDER BY e.done_at
   LIMIT $3
   FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM job_effects e USING doomed d WHERE e.tenant_id = $1 AND e.effect_key = d.effect_key RETURNING 1
)
SELECT count(*)::int AS removed FROM gone`;
