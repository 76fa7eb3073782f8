import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `schedules.last_error`: why the recurring sweep set a schedule aside (paused it) because
 * Postgres refused a value of its occurrences, which failed the batch of every tenant's
 * schedules on every run. Cleared when the schedule is resumed.
 */
export class ScheduleSetAside1764400105000 implements MigrationInterface {
  name = 'ScheduleSetAside1764400105000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE schedules ADD COLUMN last_error text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE schedules DROP COLUMN last_error`);
  }
}
