import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `job_effects_undone`: effect records claimed and never marked done, by claim time, for
 * retention (remove-abandoned-effects). Such records are rare, so the partial index is small.
 */
export class AbandonedEffects1764400090000 implements MigrationInterface {
  name = 'AbandonedEffects1764400090000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX job_effects_undone ON job_effects (tenant_id, claimed_at) WHERE done_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX job_effects_undone`);
  }
}
