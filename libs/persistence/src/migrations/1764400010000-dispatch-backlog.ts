import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Due jobs a pool had no room for. The dispatcher hands a pool only as many jobs as its live
 * workers can take (heartbeats); the rest wait here, as a reference to their still-queued row,
 * until capacity returns. A separate narrow table rather than a column or state on `jobs`:
 * parking and refilling then never rewrite a wide jobs row or touch its five indexes, and a pool
 * with no worker costs ~60 B per waiting job here instead of a lease running out.
 *
 * UNLOGGED: no WAL for a table that only mirrors `queued` rows. A crash (or a failover: unlogged
 * tables are not replicated) empties it, and the overdue sweep then re-enqueues those rows, as
 * it does for any queued row past due that nothing holds. Measured in bench/throughput.ts with
 * 20,000 jobs due at once: parking cost ~90 µs of Postgres CPU per job when logged.
 */
export class DispatchBacklog1764400010000 implements MigrationInterface {
  name = 'DispatchBacklog1764400010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE UNLOGGED TABLE dispatch_backlog (
        job_id bigint PRIMARY KEY,
        run_at timestamptz NOT NULL,
        pool text NOT NULL
      )`);
    // Refill takes a pool's oldest first; one index range per pool, whatever other pools hold.
    await q.query(`CREATE INDEX dispatch_backlog_pool_due ON dispatch_backlog (pool, run_at, job_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE dispatch_backlog`);
  }
}
