import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `jobs.progress`: what the handler last reported (`ctx.progress`), as JSON {percent, note,
 * attempt, at}; written with the worker's lease renewal, at most once a heartbeat. Nullable and
 * in no index: adding it rewrites nothing.
 */
export class JobProgress1764400110000 implements MigrationInterface {
  name = 'JobProgress1764400110000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs ADD COLUMN progress jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs DROP COLUMN progress`);
  }
}
