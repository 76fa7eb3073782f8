/**
 * Promotion, one id list at a time: the given cold rows become queued. Used only to find the row
 * Postgres refuses when a whole batch failed on a value (PromotionSweep runs it over halves);
 * COLD_DUE_SQL ($1 horizon, $2 limit), COLD_CLAIM_SQL without its lock, names the batch's rows first.
 *
 * $1 bigint[] ids. Returns what the hot queue needs of each (PROMOTE_COLD_SQL's shape).
 */
export const PROMOTE_IDS_SQL = `UPDATE jobs j SET state = 'q'
          WHERE j.id = ANY($1::bigint[]) AND j.state::text = 's'
          RETURNING j.id::text AS id, j.run_at, j.tenant_id, j.kind`;
