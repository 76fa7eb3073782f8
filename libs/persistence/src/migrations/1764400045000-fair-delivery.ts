import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fair delivery between tenants (issue 15).
 * - tenants: `weight` (share of a busy pool), `max_concurrency` (jobs handed out and unfinished,
 *   across the installation) and `kind_limits` ({kind: {perSecond?, concurrency?}}). Nulls and
 *   weight 1 are the default, so the dispatcher reads only the tenants that differ.
 * - dispatch_backlog: the tenant and kind of each parked job, so a pool's backlog refills tenant
 *   by tenant and kind by kind (fairly) instead of oldest first, where one tenant's 150,000
 *   parked jobs held back every other tenant's, and a kind held by its limit does not hold the
 *   tenant's other kinds. (`weight` is double precision: as `real`, 0.01 failed its own CHECK.)
 *   Adding constant-default columns rewrites nothing; the table is small and UNLOGGED.
 */
export class FairDelivery1764400045000 implements MigrationInterface {
  name = 'FairDelivery1764400045000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE tenants
        ADD COLUMN weight double precision NOT NULL DEFAULT 1 CHECK (weight >= 0.01 AND weight <= 1000),
        ADD COLUMN max_concurrency integer CHECK (max_concurrency > 0),
        ADD COLUMN kind_limits jsonb`);
    await q.query(`ALTER TABLE dispatch_backlog ADD COLUMN tenant_id integer NOT NULL DEFAULT 0, ADD COLUMN kind text NOT NULL DEFAULT ''`);
    await q.query(`UPDATE dispatch_backlog b SET tenant_id = j.tenant_id, kind = j.kind FROM jobs j WHERE j.id = b.job_id`);
    await q.query(`DROP INDEX dispatch_backlog_pool_due`);
    await q.query(`CREATE INDEX dispatch_backlog_pool_tenant_due ON dispatch_backlog (pool, tenant_id, kind, run_at, job_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX dispatch_backlog_pool_tenant_due`);
    await q.query(`CREATE INDEX dispatch_backlog_pool_due ON dispatch_backlog (pool, run_at, job_id)`);
    await q.query(`ALTER TABLE dispatch_backlog DROP COLUMN tenant_id, DROP COLUMN kind`);
    await q.query(`ALTER TABLE tenants DROP COLUMN weight, DROP COLUMN max_concurrency, DROP COLUMN kind_limits`);
  }
}
