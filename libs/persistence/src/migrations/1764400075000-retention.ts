import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention (see docs/architecture.md § Retention):
 * - `tenants.retention_seconds`: how long a finished job is kept; null takes the installation's
 *   default (ALMANAC_RETENTION_DEFAULT_SECONDS). At least an hour.
 * - `tenants.frees_keys`: a tenant may choose that a removed job's key is freed with its row.
 *   By default it stays reserved in `retired_keys`.
 * - `retired_keys`: one compact row per removed key. No tenant or key column: `key_hash` is
 *   hashtextextended(key, tenant_id) (the hash Postgres keeps stable for hash partitioning), so
 *   a lookup is one probe of one bigint index. 13 B of data in a 40 B tuple plus its index entry:
 *   ~74 B per key (bench/retention.ts), against ~580 B per job kept (jobs and job_attempts).
 * - `job_effects (job_id)`: effect records go with their job.
 * - jobs and job_attempts vacuum at 5 % dead rows instead of 20 %: removal turns a day's rows
 *   into dead tuples at once, and space is reused only after vacuum has seen them.
 */
export class Retention1764400075000 implements MigrationInterface {
  name = 'Retention1764400075000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE tenants
        ADD COLUMN retention_seconds integer CHECK (retention_seconds >= 3600),
        ADD COLUMN frees_keys boolean NOT NULL DEFAULT false`);
    await q.query(`
      CREATE TABLE retired_keys (
        key_hash bigint NOT NULL,
        removed_on date NOT NULL,
        state "char" NOT NULL
      )`);
    await q.query(`CREATE INDEX retired_keys_hash ON retired_keys (key_hash)`);
    await q.query(`CREATE INDEX job_effects_job ON job_effects (job_id)`);
    await q.query(`ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.05)`);
    await q.query(`ALTER TABLE job_attempts SET (autovacuum_vacuum_scale_factor = 0.05)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE job_attempts RESET (autovacuum_vacuum_scale_factor)`);
    await q.query(`ALTER TABLE jobs RESET (autovacuum_vacuum_scale_factor)`);
    await q.query(`DROP INDEX job_effects_job`);
    await q.query(`DROP TABLE retired_keys`);
    await q.query(`ALTER TABLE tenants DROP COLUMN frees_keys, DROP COLUMN retention_seconds`);
  }
}
