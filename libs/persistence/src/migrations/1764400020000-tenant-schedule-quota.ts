import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A tenant's own ceiling on schedules (null: ALMANAC_MAX_SCHEDULES_PER_TENANT). A nullable column
 * without a default is a catalog change only: no table rewrite, no long lock.
 */
export class TenantScheduleQuota1764400020000 implements MigrationInterface {
  name = 'TenantScheduleQuota1764400020000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants ADD COLUMN max_schedules integer`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants DROP COLUMN max_schedules`);
  }
}
