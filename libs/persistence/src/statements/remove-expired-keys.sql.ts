/**
 * Frees up to $2 reserved keys whose reservation ended before $1 (a UTC day), oldest first,
 * through retired_keys_expiry. Returns how many went.
 *
 * The outer WHERE repeats the subquery's condition: a row the DELETE waits for (a removal of a
 * reused key renewing its reservation) is re-checked by Postgres on its new version by that WHERE
 * only, and the renewed reservation was deleted (a replay then made a second job).
 *
 * $1 date today · $2 int batch size.
 */
export const REMOVE_EXPIRED_KEYS_SQL = `
WITH gone AS (
  DELETE FROM retired_keys r
   USING (SELECT tenant_id, key FROM retired_keys WHERE reserved_through < $1::date ORDER BY reserved_through LIMIT $2) e
   WHERE r.tenant_id = e.tenant_id AND r.key = e.key AND r.reserved_through < $1::date
  RETURNING 1
)
SELECT count(*)::int AS removed FROM gone`;
