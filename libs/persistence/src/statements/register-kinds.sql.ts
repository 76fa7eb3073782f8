/**
 * A worker asserts the definitions of the kinds it runs, at boot and every KIND_ASSERT_EVERY_MS
 * ($1 kinds, $2 pools, $3 timeouts in ms, $4 payload schemas as JSON text or null, $5 worker id,
 * $6 now, $7 how long an assertion keeps a definition live, ms).
 *
 * Each definition (a digest of pool, timeout and schema) is kept in kind_definitions with when it
 * was first seen, counted again from a reappearance after it stopped being live. The registry
 * (job_kinds) takes, per kind, the live definition first seen last: a new build's wins over the
 * old build's while both run, an old pod restarting during a rolling update does not take it
 * back, and after a rollback the old one wins once the new build's assertions stop. The registry
 * row changes only when the chosen definition does. Definitions unasserted for 30 days are
 * forgotten. Returns the kinds whose pool changed, with the pool they had, so the worker can say
 * so in its log. Callers pass the kinds sorted, so two workers lock the rows in the same order.
 */
export const REGISTER_KINDS_SQL = `WITH input AS (
    SELECT i.*, md5(concat_ws(E'\\n', i.pool, i.timeout_ms, i.payload_schema::jsonb::text)) AS digest
      FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS i(kind, pool, timeout_ms, payload_schema)
  ), asserted AS (
    INSERT INTO kind_definitions AS d (kind, digest, pool, timeout_ms, payload_schema, first_seen_at, asserted_at)
    SELECT kind, digest, pool, timeout_ms, payload_schema::jsonb, $6, $6 FROM input
    ON CONFLICT (kind, digest) DO UPDATE SET
      first_seen_at = CASE WHEN d.asserted_at < $6::timestamptz - $7 * interval '1 millisecond' THEN $6 ELSE d.first_seen_at END,
      asserted_at = GREATEST(d.asserted_at, $6)
    RETURNING kind, digest, pool, timeout_ms, payload_schema, first_seen_at
  ), live AS (
    SELECT * FROM asserted
    UNION ALL
    SELECT d.kind, d.digest, d.pool, d.timeout_ms, d.payload_schema, d.first_seen_at
      FROM kind_definitions d JOIN input i ON i.kind = d.kind AND i.digest <> d.digest
     WHERE d.asserted_at >= $6::timestamptz - $7 * interval '1 millisecond'
  ), newest AS (
    SELECT DISTINCT ON (kind) * FROM live ORDER BY kind, first_seen_at DESC, digest
  ), previous AS (
    SELECT k.kind, k.pool, k.timeout_ms, k.payload_schema FROM job_kinds k JOIN input USING (kind)
  ), upserted AS (
    INSERT INTO job_kinds (kind, pool, timeout_ms, payload_schema, registered_by, registered_at)
    SELECT n.kind, n.pool, n.timeout_ms, n.payload_schema, $5, $6
      FROM newest n LEFT JOIN previous p USING (kind)
     WHERE (p.pool, p.timeout_ms, p.payload_schema) IS DISTINCT FROM (n.pool, n.timeout_ms, n.payload_schema)
    ON CONFLICT (kind) DO UPDATE SET pool = EXCLUDED.pool, timeout_ms = EXCLUDED.timeout_ms,
      payload_schema = EXCLUDED.payload_schema, registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at
    RETURNING kind, pool
  ), forgotten AS (
    DELETE FROM kind_definitions d USING input i
     WHERE d.kind = i.kind AND d.digest <> i.digest AND d.asserted_at < $6::timestamptz - interval '30 days'
  )
  SELECT u.kind, p.pool AS previous_pool FROM upserted u JOIN previous p USING (kind) WHERE p.pool <> u.pool`;
