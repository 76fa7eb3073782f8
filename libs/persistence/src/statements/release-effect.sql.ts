/**
 * Gives up a claim whose call failed, so the job's retry may call again ($1 tenant id, $2 effect
 * key, $3 job id, $4 the claim's token, its claimed_at: only that claim, never a later one or a done record).
 */
export const RELEASE_EFFECT_SQL = `DELETE FROM job_effects WHERE tenant_id = $1 AND effect_key = $2 AND job_id = $3 AND claimed_at = $4::timestamptz AND done_at IS NULL`;
