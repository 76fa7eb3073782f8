/**
 * Removes up to $3 of one tenant's bulk operations that ended (done, failed or cancelled) before
 * $2, with whatever chunks one left (ON DELETE CASCADE): `GET /v1/operations/:id` answers 404 for
 * them afterwards, as for the jobs they changed. Walks bulk_operations_tenant.
 *
 * $1 int tenant · $2 timestamptz cutoff · $3 int batch size. Returns the operations removed.
 */
export const REMOVE_EXPIRED_BULK_OPERATIONS_SQL = `
WITH doomed AS (
  SELECT id FROM bulk_operations
   WHERE tenant_id = $1 AND state IN ('done', 'failed', 'cancelled') AND finished_at < $2
   ORDER BY id
   LIMIT $3
   FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM bulk_operations b USING doomed d WHERE b.id = d.id RETURNING 1
)
SELECT count(*)::int AS removed FROM gone`;
