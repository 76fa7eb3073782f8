/** The columns a bulk operation is read with (BulkOperationsRepository's OperationRow). */
export const BULK_OPERATION_COLUMNS = `id::text, tenant_id, key, action, filter, change, state, created_at, started_at, finished_at,
       matched, chunks, next_chunk, changed, skipped, failures, lasting_failures, error`;

/**
 * Accepts a bulk operation unless its tenant already has `$5` open (pending or running): each
 * one's matching scans the tenant's future jobs, so a tenant may not queue them without end.
 * No row: over that limit.
 *
 * $1 int tenant · $2 text action · $3 jsonb filter · $4 jsonb change (or null) · $5 int open limit ·
 * $6 text key (or null).
 */
export const CREATE_BULK_OPERATION_SQL = `INSERT INTO bulk_operations (tenant_id, action, filter, change, key)
  SELECT $1, $2, $3::jsonb, $4::jsonb, $6
   WHERE (SELECT count(*) FROM bulk_operations WHERE tenant_id = $1 AND state IN ('pending', 'running')) < $5
  RETURNING ${BULK_OPERATION_COLUMNS}`;
