/**
 * Removes one tenant's signing secrets that stopped being live before $2: kept as they are for
 * signing, an old secret would otherwise stay readable in the database for good, and every
 * rotation would lengthen the tenant's list. A tenant holds a handful: no batch.
 *
 * $1 int tenant · $2 timestamptz cutoff. Returns the secrets removed.
 */
export const REMOVE_EXPIRED_SIGNING_SECRETS_SQL = `
WITH gone AS (
  DELETE FROM tenant_signing_secrets WHERE tenant_id = $1 AND expires_at < $2 RETURNING 1
)
SELECT count(*)::int AS removed FROM gone`;
