/**
 * Records effect `$2` of tenant `$1` as done by job `$3`, with its result ($4 JSON text or null).
 * The effect happened, whoever holds the claim now: a run whose claim was taken over (it was
 * slow, not dead) or released still records it, so no later run makes the call again. A record
 * already done keeps its first result.
 */
export const FINISH_EFFECT_SQL = `INSERT INTO job_effects AS e (tenant_id, effect_key, job_id, claimed_at, done_at, result)
  VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp(), $4::jsonb)
  ON CONFLICT (tenant_id, effect_key) DO UPDATE SET done_at = EXCLUDED.done_at, result = EXCLUDED.result, job_id = EXCLUDED.job_id
    WHERE e.done_at IS NULL`;
