/**
 * Claims the effect `$2` of tenant `$1` for job `$3` at `$4`, or reports the existing record
 * ($1 tenant id, $2 effect key, $3 job id, $4 now, $5 claims older than this are taken over).
 * One row comes back: `claimed` true when this call now holds the effect (a new record, or a
 * stale claim whose runner is presumed dead), else the record as it stands (`done_at`, `result`
 * when done; a fresh claim of another run otherwise). Committed on its own, before the call.
 */
export const CLAIM_EFFECT_SQL = `WITH claimed AS (
    INSERT INTO job_effects AS e (tenant_id, effect_key, job_id, claimed_at)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (tenant_id, effect_key) DO UPDATE SET job_id = EXCLUDED.job_id, claimed_at = EXCLUDED.claimed_at
      WHERE e.done_at IS NULL AND e.claimed_at < $5
    RETURNING true AS claimed, done_at, result
  )
  SELECT claimed, done_at, result FROM claimed
  UNION ALL
  SELECT false, done_at, result FROM job_effects WHERE tenant_id = $1 AND effect_key = $2 AND NOT EXISTS (SELECT 1 FROM claimed)`;
