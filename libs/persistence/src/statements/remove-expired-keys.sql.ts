/** The reservation ended before the day before $1, the database's UTC day. */
const ENDED = `reserved_through < $1::date - 1`;

/**
 * Frees up to $2 reserved keys whose reservation ended before the day before $1 (the database's
 * UTC day, read once a run by the sweep: ingest's check goes by that clock), oldest first, through
 * retired_keys_expiry. Returns how many went.
 *
 * A day late: the check takes its statement's start time, so an insert begun on a key's last day
 * that runs past midnight still goes by that day and must find the row.
 *
 * The outer WHERE repeats the subquery's condition: a row the DELETE waits for (a removal of a
 * reused key renewing its reservation) is re-checked by Postgres on its new version by that WHERE
 * only, and the renewed reservation was deleted (a replay then made a second job).
 *
 * $1 date today (the database's) · $2 int batch size.
 */
export const REMOVE_EXPIRED_KEYS_SQL = `
WITH gone AS (
  DELETE FROM retired_keys r
   USING (SELECT tenant_id, key FROM retired_keys WHERE ${ENDED} ORDER BY reserved_through LIMIT $2) e
   WHERE r.tenant_id = e.tenant_id AND r.key = e.key AND r.${ENDED}
  RETURNING 1
)
SELECT count(*)::int AS removed FROM gone`;
