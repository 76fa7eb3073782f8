import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The stretches of the key order that a tenant's reserved keys lie in, so an insert looks up its
 * keys in `retired_keys` only when its batch could name one.
 *
 * `retired_keys` is keyed by a hash, which scatters the keys over the whole index: every new row
 * cost a random page of it (bench/retired-keys.ts: ×0.80 of the insert rate beside 30 M reserved
 * keys). But a batch's keys usually share a stretch of the key order (a day's invoices, an order
 * sequence, ULIDs), far from the keys removed a month before. `retired_key_ranges` holds, per
 * tenant, disjoint key ranges [lo, hi] that together cover the key of every finished job ever
 * deleted from `jobs`, which is every key retention retires (`hi` NULL is unbounded).
 *
 * - Written by the database, not by the removal statement: a trigger on DELETE FROM jobs, so a
 *   promoter of the release before (a rolling update), or an operator's DELETE, is covered too.
 *   Per tenant and hour of run time (keys that carry time cluster by it: a batch straddling
 *   midnight gives two ranges, not one spanning every day between), merged with the ranges
 *   they overlap. It runs in the deleting statement's transaction, so the hashes and their
 *   ranges commit together. It takes one advisory lock (held from the end of the deleting
 *   statement to its commit) before it reads the ranges, under READ COMMITTED only, so each
 *   writer sees the last one's ranges and they stay disjoint.
 * - Read by the reserved-key check: per tenant in the inserting statement, the range with the
 *   greatest `lo` not above the batch's highest key (one descent of the primary key); the
 *   ranges being disjoint, the batch can meet a range only if it meets that one. Only then are
 *   the keys looked up by hash.
 *
 * Keys retired before this migration had no ranges: every tenant then existing gets an unbounded
 * one (it goes on looking every key up, as before).
 */
export class RetiredKeyRanges1764400080000 implements MigrationInterface {
  name = 'RetiredKeyRanges1764400080000';

  async up(q: QueryRunner): Promise<void> {
    // COLLATE "C" like jobs.key: a batch's lowest and highest key are taken in jobs.key's order,
    // and must be compared with the ranges in that same order.
    await q.query(`
      CREATE TABLE retired_key_ranges (
        tenant_id integer NOT NULL,
        lo text COLLATE "C" NOT NULL,
        hi text COLLATE "C",
        PRIMARY KEY (tenant_id, lo) INCLUDE (hi)
      )`);
    await q.query(`
      CREATE FUNCTION almanac_range_removed_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM gone_jobs WHERE state IN ('d', 'x', 'c')) THEN
          RETURN NULL;
        END IF;
        -- Under REPEATABLE READ the query below would read ranges from before the lock wait, and
        -- two writers could leave overlapping ranges, which the reserved-key check trusts not to be.
        IF current_setting('transaction_isolation') <> 'read committed' THEN
          RAISE EXCEPTION 'finished jobs are deleted under READ COMMITTED only (retired_key_ranges)' USING ERRCODE = 'AL002';
        END IF;
        -- One writer of ranges at a time, from here to its commit (milliseconds); the query below
        -- takes its snapshot after the wait, so it sees the ranges the last holder committed.
        PERFORM pg_advisory_xact_lock(1764400080);
        WITH spans AS (
          SELECT tenant_id, min(key) AS lo, max(key) AS hi FROM gone_jobs
           WHERE state IN ('d', 'x', 'c') GROUP BY tenant_id, date_trunc('hour', run_at)
        ), near AS (
          -- The ranges a span overlaps: they being disjoint, the last one starting at or before the
          -- span's lo (if it reaches it), and those starting within the span.
          SELECT DISTINCT s.tenant_id, c.lo FROM spans s CROSS JOIN LATERAL (
            (SELECT r.lo, r.hi FROM retired_key_ranges r WHERE r.tenant_id = s.tenant_id AND r.lo <= s.lo ORDER BY r.lo DESC LIMIT 1)
            UNION ALL
            SELECT r.lo, r.hi FROM retired_key_ranges r WHERE r.tenant_id = s.tenant_id AND r.lo > s.lo AND r.lo <= s.hi
          ) c
           WHERE c.hi IS NULL OR c.hi >= s.lo
        ), hit AS (
          DELETE FROM retired_key_ranges r USING near n WHERE r.tenant_id = n.tenant_id AND r.lo = n.lo
          RETURNING r.tenant_id, r.lo, r.hi
        ), pieces AS (
          SELECT tenant_id, lo, hi,
                 CASE WHEN coalesce(bool_or(hi IS NULL) OVER before, false) OR lo <= max(hi) OVER before THEN 0 ELSE 1 END AS starts
            FROM (SELECT tenant_id, lo, hi FROM spans UNION ALL SELECT tenant_id, lo, hi FROM hit) p
          WINDOW before AS (PARTITION BY tenant_id ORDER BY lo ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
        ), islands AS (
          SELECT tenant_id, lo, hi, sum(starts) OVER (PARTITION BY tenant_id ORDER BY lo ROWS UNBOUNDED PRECEDING) AS island FROM pieces
        )
        INSERT INTO retired_key_ranges (tenant_id, lo, hi)
        SELECT tenant_id, min(lo), CASE WHEN bool_or(hi IS NULL) THEN NULL ELSE max(hi) END FROM islands GROUP BY tenant_id, island;
        RETURN NULL;
      END $$`);
    // Takes a lock on jobs that waits for removals in flight, whose keys the legacy ranges below
    // must then cover.
    await q.query(`
      CREATE TRIGGER jobs_range_removed_keys AFTER DELETE ON jobs
        REFERENCING OLD TABLE AS gone_jobs FOR EACH STATEMENT EXECUTE FUNCTION almanac_range_removed_keys()`);
    await q.query(`INSERT INTO retired_key_ranges (tenant_id, lo, hi) SELECT id, '', NULL FROM tenants WHERE EXISTS (SELECT 1 FROM retired_keys)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION almanac_refuse_retired_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE b record;
      BEGIN
        FOR b IN SELECT tenant_id, min(key) AS lo, max(key) AS hi FROM new_jobs GROUP BY tenant_id LOOP
          IF EXISTS (SELECT 1 FROM (SELECT r.hi FROM retired_key_ranges r
                                     WHERE r.tenant_id = b.tenant_id AND r.lo <= b.hi
                                     ORDER BY r.lo DESC LIMIT 1) nearest
                      WHERE nearest.hi IS NULL OR nearest.hi >= b.lo) THEN
            IF EXISTS (SELECT 1 FROM retired_keys
                        WHERE key_hash = ANY (ARRAY(SELECT hashtextextended(n.key, n.tenant_id) FROM new_jobs n))) THEN
              RAISE EXCEPTION 'a key names a job removed by retention' USING ERRCODE = 'AL001';
            END IF;
            RETURN NULL; -- every new key has been looked up
          END IF;
        END LOOP;
        RETURN NULL;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION almanac_refuse_retired_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM retired_keys
                    WHERE key_hash = ANY (ARRAY(SELECT hashtextextended(n.key, n.tenant_id) FROM new_jobs n))) THEN
          RAISE EXCEPTION 'a key names a job removed by retention' USING ERRCODE = 'AL001';
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`DROP TRIGGER jobs_range_removed_keys ON jobs`);
    await q.query(`DROP FUNCTION almanac_range_removed_keys()`);
    await q.query(`DROP TABLE retired_key_ranges`);
  }
}
