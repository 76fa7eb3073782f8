import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two corrections to the retention migration before its first release:
 *
 * - A replay must never re-create a retired key. An INSERT's anti-join on `retired_keys` used its
 *   statement's snapshot, so a replay that began while the retention sweep was removing the key's
 *   job waited on the unique index for the sweep, then inserted (the old row was gone, and the new
 *   retired key was not in its snapshot). The check moves to a statement-level AFTER INSERT
 *   trigger: its query runs after the insert's unique checks, with a snapshot of its own, so it
 *   sees any retirement the insert had to wait for, and fails the statement (SQLSTATE AL001); the
 *   repository then answers those keys as retired and inserts the rest. One probe of
 *   `retired_keys_hash` per new row, as before.
 * - Effect records expire by their own `done_at`, not with the job that last touched them: an
 *   effect key may be shared by several jobs, and removing one job must not take the record
 *   another relies on. `job_effects_job` gives way to `job_effects_done (tenant_id, done_at)`.
 */
export class RetiredKeysGuard1764400076000 implements MigrationInterface {
  name = 'RetiredKeysGuard1764400076000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION almanac_refuse_retired_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM new_jobs n
                    WHERE EXISTS (SELECT 1 FROM retired_keys r WHERE r.key_hash = hashtextextended(n.key, n.tenant_id))) THEN
          RAISE EXCEPTION 'a key names a job removed by retention' USING ERRCODE = 'AL001';
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER jobs_refuse_retired_keys AFTER INSERT ON jobs
        REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION almanac_refuse_retired_keys()`);
    await q.query(`DROP INDEX job_effects_job`);
    await q.query(`CREATE INDEX job_effects_done ON job_effects (tenant_id, done_at) WHERE done_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX job_effects_done`);
    await q.query(`CREATE INDEX job_effects_job ON job_effects (job_id)`);
    await q.query(`DROP TRIGGER jobs_refuse_retired_keys ON jobs`);
    await q.query(`DROP FUNCTION almanac_refuse_retired_keys()`);
  }
}
