import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Stored bytes per tenant, for its quota: `tenants.stored_bytes` is the last finished pass of
 * the stored-bytes sweep (statements/measure-stored-bytes.sql.ts), `stored_bytes_partial` what
 * the pass in progress has added so far, and `storage_scan` (one row) where that pass stands.
 * `max_stored_bytes` is the tenant's own quota; NULL: the installation's default.
 */
export class TenantStoredBytes1764400130000 implements MigrationInterface {
  name = 'TenantStoredBytes1764400130000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE tenants ADD COLUMN max_stored_bytes bigint,
                          ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0,
                          ADD COLUMN stored_bytes_partial bigint NOT NULL DEFAULT 0,
                          ADD COLUMN stored_bytes_at timestamptz`);
    await q.query(`
      CREATE TABLE storage_scan (
        single boolean PRIMARY KEY DEFAULT true CHECK (single),
        phase smallint NOT NULL DEFAULT 0,
        after_id bigint NOT NULL DEFAULT 0
      )`);
    await q.query(`INSERT INTO storage_scan DEFAULT VALUES`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE storage_scan`);
    await q.query(`ALTER TABLE tenants DROP COLUMN max_stored_bytes, DROP COLUMN stored_bytes, DROP COLUMN stored_bytes_partial, DROP COLUMN stored_bytes_at`);
  }
}
