/**
 * Claims the effect `$2` of tenant `$1` for job `$3`, or reports the existing record ($1 tenant
 * id, $2 effect key, $3 job id, $4 claims older than this many ms are taken over). Times are
 * the database's clock, the one clock every worker shares. One row comes back: `claimed` true
 * when this call now holds the effect (a new record, or a stale claim whose runner is presumed
 * dead), with its exact `claimed_at` as text (`token`: microseconds, which a JS Date would lose); else the record as it stands (`done_at` and
 * `result` when done; another run's fresh claim otherwise, with its age). Committed on its own.
 */
export const CLAIM_EFFECT_SQL = `WITH claimed AS (
    INSERT INTO job_effects AS e (tenant_id, effect_key, job_id, claimed_at)
    VALUES ($1, $2, $3, clock_timestamp())
    ON CONFLICT (tenant_id, effect_key) DO UPDATE SET job_id = EXCLUDED.job_id, claimed_at = EXCLUDED.claimed_at
      WHERE e.done_at IS NULL AND e.claimed_at < clock_timestamp() - $4 * interval '1 millisecond'
    RETURNING true AS claimed, claimed_at::text AS token, done_at, result
  )
  SELECT claimed, token, done_at, result, 0::float8 AS age_ms FROM claimed
  UNION ALL
  SELECT false, claimed_at::text, done_at, result, extract(epoch FROM clock_timestamp() - claimed_at) * 1000
    FROM job_effects WHERE tenant_id = $1 AND effect_key = $2 AND NOT EXISTS (SELECT 1 FROM claimed)`;
