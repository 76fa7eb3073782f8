/** Records effect `$2` of tenant `$1` as done, with its result ($3 JSON text or null, $4 now). */
export const FINISH_EFFECT_SQL = `UPDATE job_effects SET done_at = $4, result = $3::jsonb WHERE tenant_id = $1 AND effect_key = $2`;
