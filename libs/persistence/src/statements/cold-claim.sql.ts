/**
 * Promotion's claim of cold rows in hour order, the one copy production, the plan test and the
 * bench use ($1 horizon, $2 limit). Production runs it after the fair share of a batch
 * (PROMOTE_COLD_FAIR_SQL) for what the tenants left: whole UTC hour buckets ≤ hour(horizon),
 * ordered by the index expression with a LIMIT, so the planner walks jobs_cold_due as a range
 * scan whatever its row estimates. COLD_DUE_SQL is the same rows unlocked (what a batch that
 * failed on a value would have promoted, for PromotionSweep to split). (An extra `run_at <= x` filter was tried: at 10 M rows it made the planner expect
 * few matches and pick a 3 s sequential scan.)
 */
export const COLD_DUE_SQL = `SELECT id, tenant_id FROM jobs
  WHERE state = 's' AND almanac_hour(run_at) <= almanac_hour($1::timestamptz)
  ORDER BY almanac_hour(run_at)
  LIMIT $2::int`;
export const COLD_CLAIM_SQL = `${COLD_DUE_SQL}
  FOR UPDATE SKIP LOCKED`;
