import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The `charge` kind's effect table. UNIQUE (tenant_id, invoice_id) is the point: an invoice can
 * never be charged twice, whatever happens to deliveries. `job_id` says which job made the charge.
 */
export class Charges1796400000100 implements MigrationInterface {
  name = 'Charges1796400000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE charges (
        tenant_id integer NOT NULL,
        amount_cents bigint NOT NULL CHECK (amount_cents > 0),
        job_id bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        invoice_id text COLLATE "C" NOT NULL,
        PRIMARY KEY (tenant_id, invoice_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE charges`);
  }
}
