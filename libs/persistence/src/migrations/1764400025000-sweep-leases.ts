import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sweep leases replace session advisory locks: a lease is a row with an expiry, so a sweep can
 * wait on Redis without holding a lock or a connection, and a stalled holder loses its turn once
 * the lease runs out instead of whenever its session dies.
 */
export class SweepLeases1764400025000 implements MigrationInterface {
  name = 'SweepLeases1764400025000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE sweep_leases (
      name text PRIMARY KEY,
      holder text NOT NULL,
      expires_at timestamptz NOT NULL
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE sweep_leases`);
  }
}
