import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The `ledger-transfer` kind's accounts, one balance per tenant and account. */
export class LedgerBalances1796400000200 implements MigrationInterface {
  name = 'LedgerBalances1796400000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ledger_balances (
        tenant_id integer NOT NULL,
        account text NOT NULL,
        balance_cents bigint NOT NULL,
        PRIMARY KEY (tenant_id, account)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ledger_balances`);
  }
}
