import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A schedule may expect each run to start within `expect_within_seconds` of its due instant. The
 * promoter's schedule watch classifies its occurrences once that time has passed, up to
 * `watched_through` (a nominal instant), and keeps the latest outcome (`last_outcome`: ok, late,
 * missed, failed) and when that run was due. `schedules_watched` holds only schedules that expect.
 */
export class ScheduleExpectations1764400095000 implements MigrationInterface {
  name = 'ScheduleExpectations1764400095000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE schedules ADD COLUMN expect_within_seconds integer, ADD COLUMN watched_through timestamptz,
      ADD COLUMN last_outcome text, ADD COLUMN last_outcome_at timestamptz`);
    await q.query(`CREATE INDEX schedules_watched ON schedules (coalesce(watched_through, created_at)) WHERE expect_within_seconds IS NOT NULL AND NOT paused`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX schedules_watched`);
    await q.query(`ALTER TABLE schedules DROP COLUMN expect_within_seconds, DROP COLUMN watched_through, DROP COLUMN last_outcome, DROP COLUMN last_outcome_at`);
  }
}
