import type { MigrationInterface, QueryRunner } from 'typeorm';
import { RetiredKeyRanges1764400080000 } from './1764400080000-retired-key-ranges';

/**
 * A removed job's key is kept as itself, scoped by its tenant: `retired_keys (tenant_id, key)`,
 * in key order (COLLATE "C", like jobs.key), instead of a 64-bit hash with no tenant column.
 *
 * - No key of one tenant can touch another's: the hash was not cryptographic, so a tenant could
 *   craft a key colliding with another tenant's retired key and make that tenant's key answer
 *   409 "retired" forever (issue 33).
 * - Keys that share a stretch of the key order (a day's invoices, ULIDs) share index pages, so
 *   the per-tenant key ranges that spared inserts the hash's random probes go, with the DELETE
 *   trigger that wrote them, its advisory lock and its isolation rule (SQLSTATE AL002).
 * - One statement-level AFTER INSERT trigger stays (`jobs_refuse_retired_keys`, SQLSTATE AL001):
 *   its query runs after the insert's unique checks with a snapshot of its own, so it sees a
 *   removal that committed while the insert waited on the old row. An anti-join in the INSERT
 *   would read the statement's older snapshot and let such a replay re-create the key.
 *
 * - A key stays reserved through `reserved_through` (a UTC day; NULL: forever), fixed when it is
 *   retired from its tenant's choice: `tenants.key_reservation_seconds` (NULL: the installation's
 *   default) or `keys_reserved_forever`. The retention sweep deletes keys past their day through
 *   `retired_keys_expiry`; until then the check and the look-ups pass over them.
 *
 * Keys retired as hashes cannot be turned back into keys; no release shipped that table, and
 * this migration refuses to run over one that holds any.
 */
export class TenantScopedRetiredKeys1764400100000 implements MigrationInterface {
  name = 'TenantScopedRetiredKeys1764400100000';

  async up(q: QueryRunner): Promise<void> {
    const [{ n }] = (await q.query(`SELECT count(*)::int AS n FROM retired_keys`)) as { n: number }[];
    if (n > 0) throw new Error(`retired_keys holds ${n} keys as hashes, which cannot be carried over: a pre-release schema`);
    await q.query(`DROP TRIGGER jobs_range_removed_keys ON jobs`);
    await q.query(`DROP FUNCTION almanac_range_removed_keys()`);
    await q.query(`DROP TABLE retired_key_ranges`);
    await q.query(`DROP TABLE retired_keys`);
    await q.query(`
      CREATE TABLE retired_keys (
        tenant_id integer NOT NULL,
        key text COLLATE "C" NOT NULL,
        removed_on date NOT NULL,
        state "char" NOT NULL,
        reserved_through date,
        PRIMARY KEY (tenant_id, key)
      )`);
    await q.query(`CREATE INDEX retired_keys_expiry ON retired_keys (reserved_through) WHERE reserved_through IS NOT NULL`);
    await q.query(`
      ALTER TABLE tenants
        ADD COLUMN key_reservation_seconds integer CHECK (key_reservation_seconds BETWEEN 86400 AND 315360000),
        ADD COLUMN keys_reserved_forever boolean NOT NULL DEFAULT false`);
    // Per tenant of the statement (a batch is usually one tenant's): first one descent to the
    // tenant's retired keys between the batch's lowest and highest key, then, only if there is
    // one, a probe per key (= ANY). A batch of keys that carry a date lies past every key
    // retired before, so it costs the one descent.
    await q.query(`
      CREATE OR REPLACE FUNCTION almanac_refuse_retired_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE b record;
      BEGIN
        FOR b IN SELECT tenant_id, min(key) AS lo, max(key) AS hi, array_agg(key) AS keys FROM new_jobs GROUP BY tenant_id LOOP
          IF EXISTS (SELECT 1 FROM retired_keys WHERE tenant_id = b.tenant_id AND key >= b.lo AND key <= b.hi)
             AND EXISTS (SELECT 1 FROM retired_keys WHERE tenant_id = b.tenant_id AND key = ANY (b.keys)
                            AND (reserved_through IS NULL OR reserved_through >= (statement_timestamp() AT TIME ZONE 'UTC')::date)) THEN
            RAISE EXCEPTION 'a key names a job removed by retention' USING ERRCODE = 'AL001';
          END IF;
        END LOOP;
        RETURN NULL;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants DROP COLUMN key_reservation_seconds, DROP COLUMN keys_reserved_forever`);
    await q.query(`ALTER TABLE retired_keys RENAME TO retired_keys_by_key`);
    await q.query(`CREATE TABLE retired_keys (key_hash bigint NOT NULL, removed_on date NOT NULL, state "char" NOT NULL)`);
    await q.query(`INSERT INTO retired_keys SELECT hashtextextended(key, tenant_id), removed_on, state FROM retired_keys_by_key
                    WHERE reserved_through IS NULL OR reserved_through >= (now() AT TIME ZONE 'UTC')::date`);
    await q.query(`CREATE INDEX retired_keys_hash ON retired_keys (key_hash)`);
    await q.query(`DROP TABLE retired_keys_by_key`);
    // The ranges' migration re-creates them (every tenant unbounded when keys exist) and the check that reads them.
    await new RetiredKeyRanges1764400080000().up(q);
  }
}
