import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The stretches of the key order that a tenant's reserved keys lie in, so an insert looks up its
 * keys in `retired_keys` only when its batch could name one.
 *
 * `retired_keys` is keyed by a hash, which scatters the keys over the whole index: every new row
 * cost a random page of it (bench/retired-keys.ts: ×0.80 of the insert rate beside 30 M reserved
 * keys). But a batch's keys usually share a stretch of the key order (a day's invoices, an order
 * sequence, ULIDs), far from the keys removed a month before. `retired_key_ranges` holds, per
 * tenant, key ranges [lo, hi] that together cover every key the tenant has retired: each
 * retention batch adds the range of its keys in the same statement as their hashes, merged with
 * the ranges it overlaps, so a tenant whose keys carry time keeps about one range per day
 * retired, and one whose keys are random (UUIDv4) one range covering them all. The trigger
 * asks, per tenant in the statement, whether any range meets [lowest new key, highest new key]
 * (one short index scan), and looks the keys up by hash only then.
 *
 * Ranges overlap only when two replicas remove the same tenant's rows at once; the check does not
 * rely on them being disjoint. `hi` NULL is unbounded: the range every existing tenant gets here
 * when keys were retired before this migration, which kept no ranges (those tenants go on
 * looking every key up, as before).
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
        hi text COLLATE "C"
      )`);
    await q.query(`CREATE INDEX retired_key_ranges_tenant_lo ON retired_key_ranges (tenant_id, lo)`);
    await q.query(`INSERT INTO retired_key_ranges (tenant_id, lo, hi) SELECT id, '', NULL FROM tenants WHERE EXISTS (SELECT 1 FROM retired_keys)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION almanac_refuse_retired_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE b record;
      BEGIN
        FOR b IN SELECT tenant_id, min(key) AS lo, max(key) AS hi FROM new_jobs GROUP BY tenant_id LOOP
          IF EXISTS (SELECT 1 FROM retired_key_ranges r
                      WHERE r.tenant_id = b.tenant_id AND r.lo <= b.hi AND (r.hi IS NULL OR r.hi >= b.lo)) THEN
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
    await q.query(`DROP TABLE retired_key_ranges`);
  }
}
