import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Scheduled (cold) rows by tenant and hour bucket, so that a tenant's listing reads only its own
 * rows. Before it, cold rows were listed through `jobs_cold_due` (every tenant's hour buckets)
 * filtered by tenant: an empty tenant's `GET /v1/jobs?limit=1` read another tenant's million
 * cold rows (120 ms against 9.5 ms; issue 12). The key repeats for every row a tenant has in
 * one hour, so B-tree deduplication stores most rows as a 6-byte heap pointer in a posting list:
 * a few bytes per job, not the ~40 of a (tenant_id, run_at, id) index.
 *
 * Built CONCURRENTLY (outside a transaction, no statement timeout) so an existing installation
 * keeps taking writes while it builds.
 */
export class ColdTenantIndex1764400015000 implements MigrationInterface {
  name = 'ColdTenantIndex1764400015000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET statement_timeout = 0`);
    try {
      // A build interrupted earlier leaves an INVALID index of this name: drop it and start over.
      await q.query(`DROP INDEX CONCURRENTLY IF EXISTS jobs_cold_tenant`);
      await q.query(`CREATE INDEX CONCURRENTLY jobs_cold_tenant ON jobs (tenant_id, almanac_hour(run_at)) WHERE state = 's'`);
    } finally {
      await q.query(`RESET statement_timeout`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS jobs_cold_tenant`);
  }
}
