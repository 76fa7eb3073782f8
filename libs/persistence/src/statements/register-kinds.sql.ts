/**
 * A worker asserts the definitions of the kinds it runs, at boot and every KIND_ASSERT_EVERY_MS
 * ($1 kinds, $2 pools, $3 timeouts in ms, $4 payload schemas as JSON text or null, $5 worker id,
 * $6 how long an assertion keeps a definition live, ms). Times are the database's clock, so the
 * workers' clocks do not matter.
 *
 * Each definition (a digest of pool, timeout and schema) is kept in kind_definitions with when it
 * was first seen. The registry (job_kinds) takes, per kind, the live definition first seen
 * last: a new build's wins over the old build's while both run, so an old pod restarting does
 * not take it back, and an outage that stops every worker leaves the order as it was. After a
 * rollback the old definition wins once the new one is no longer live (the live window after
 * the new build's last assertion). The registry row changes only when the chosen definition
 * does. Two builds asserting at the same instant may leave the older one chosen until the next
 * assertion.
 * Returns, to say so in the worker's log, the kinds whose pool this registration changed (with
 * the pool they had) and those whose chosen definition is another live one, not the asserting
 * worker's (with its pool): an older build during a rolling update, or two deployments that
 * disagree. Callers pass the kinds sorted, so two workers lock the rows in the same order.
 */
export const REGISTER_KINDS_SQL = `WITH input AS (
    SELECT i.*, md5(concat_ws(E'\\n', i.pool, i.timeout_ms, i.payload_schema::jsonb::text)) AS digest
      FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS i(kind, pool, timeout_ms, payload_schema)
  ), asserted AS (
    INSERT INTO kind_definitions AS d (kind, digest, pool, timeout_ms, payload_schema, first_seen_at, asserted_at)
    SELECT kind, digest, pool, timeout_ms, payload_schema::jsonb, statement_timestamp(), statement_timestamp() FROM input
    ON CONFLICT (kind, digest) DO UPDATE SET asserted_at = statement_timestamp()
    RETURNING kind, digest, pool, timeout_ms, payload_schema, first_seen_at
  ), live AS (
    SELECT * FROM asserted
    UNION ALL
    SELECT d.kind, d.digest, d.pool, d.timeout_ms, d.payload_schema, d.first_seen_at
      FROM kind_definitions d JOIN input i ON i.kind = d.kind AND i.digest <> d.digest
     WHERE d.asserted_at >= statement_timestamp() - $6 * interval '1 millisecond'
  ), newest AS (
    SELECT DISTINCT ON (kind) * FROM live ORDER BY kind, first_seen_at DESC, digest
  ), previous AS (
    SELECT k.kind, k.pool, k.timeout_ms, k.payload_schema FROM job_kinds k JOIN input USING (kind)
  ), upserted AS (
    INSERT INTO job_kinds (kind, pool, timeout_ms, payload_schema, registered_by, registered_at)
    SELECT n.kind, n.pool, n.timeout_ms, n.payload_schema, $5, statement_timestamp()
      FROM newest n LEFT JOIN previous p USING (kind)
     WHERE (p.pool, p.timeout_ms, p.payload_schema) IS DISTINCT FROM (n.pool, n.timeout_ms, n.payload_schema)
    ON CONFLICT (kind) DO UPDATE SET pool = EXCLUDED.pool, timeout_ms = EXCLUDED.timeout_ms,
      payload_schema = EXCLUDED.payload_schema, registered_by = EXCLUDED.registered_by, registered_at = EXCLUDED.registered_at
    RETURNING kind, pool
  )
  SELECT n.kind, n.pool, CASE WHEN p.pool <> u.pool THEN p.pool END AS previous_pool, n.digest <> i.digest AS superseded
    FROM newest n JOIN input i USING (kind) LEFT JOIN previous p USING (kind) LEFT JOIN upserted u USING (kind)
   WHERE p.pool <> u.pool OR n.digest <> i.digest`;

/** Definitions of these kinds ($1) no worker has asserted for 30 days: forgotten, apart from the assertion. */
export const FORGET_KIND_DEFINITIONS_SQL = `DELETE FROM kind_definitions
  WHERE kind = ANY($1::text[]) AND asserted_at < statement_timestamp() - interval '30 days'`;

/**
 * Whether the registry's definition of kind $1 is another than a worker's own ($2 pool, $3 timeout
 * in ms, $4 payload schema as JSON text or null): REGISTER_KINDS_SQL's `superseded`, read without
 * asserting, for a worker whose schema refused a payload between two assertions. `read_at`: when,
 * by the database's clock; a kind not in the registry is no other definition's.
 */
export const READ_KIND_STANDING_SQL = `SELECT statement_timestamp() AS read_at, k.pool,
    k.kind IS NOT NULL AND (k.pool, k.timeout_ms, k.payload_schema) IS DISTINCT FROM ($2::text, $3::int, $4::jsonb) AS superseded
  FROM (SELECT 1) AS one LEFT JOIN job_kinds k ON k.kind = $1`;
