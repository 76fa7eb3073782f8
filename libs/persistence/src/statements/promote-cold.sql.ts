import { COLD_CLAIM_SQL } from './cold-claim.sql';

/**
 * Promotion: the cold rows COLD_CLAIM_SQL claims become queued. Returns what the hot queue needs
 * of each (never the payload). Fills the batch after PROMOTE_COLD_FAIR_SQL in the same
 * transaction: the rows that statement queued are no longer `s`, so nothing is claimed twice.
 *
 * $1 timestamptz horizon · $2 int limit (COLD_CLAIM_SQL's).
 */
export const PROMOTE_COLD_SQL = `UPDATE jobs j SET state = 'q'
           FROM (${COLD_CLAIM_SQL}) c
          WHERE j.id = c.id AND j.state::text = 's'
          RETURNING j.id::text AS id, j.run_at, j.tenant_id, j.kind`;
