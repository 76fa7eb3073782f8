/**
 * A worker's registration of the kinds it runs, one statement for all of them ($1 kinds, $2
 * pools, $3 timeouts in ms, $4 payload schemas as JSON text or null, $5 worker id, $6 now). The
 * last registration of a kind wins: a new worker build that moves a kind to another pool, or
 * changes its schema, takes effect as it boots. Returns the kinds whose pool changed, with the
 * pool they had (as of the statement's snapshot), so the worker can say so in its log. Callers
 * pass the kinds sorted, so two workers booting at once lock the rows in the same order.
 */
export const REGISTER_KINDS_SQL = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS i(kind, pool, timeout_ms, payload_schema)
  ), previous AS (
    SELECT k.kind, k.pool FROM job_kinds k JOIN input USING (kind)
  ), upserted AS (
    INSERT INTO job_kinds (kind, pool, timeout_ms, payload_schema, registered_by, registered_at)
    SELECT kind, pool, timeout_ms, payload_schema::jsonb, $5, $6 FROM input
    ON CONFLICT (kind) DO UPDATE SET pool = EXCLUDED.pool, timeout_ms = EXCLUDED.timeout_ms,
      payload_schema = EXCLUDED.payload_schema, registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at
    RETURNING kind, pool
  )
  SELECT u.kind, p.pool AS previous_pool FROM upserted u JOIN previous p USING (kind) WHERE p.pool <> u.pool`;
