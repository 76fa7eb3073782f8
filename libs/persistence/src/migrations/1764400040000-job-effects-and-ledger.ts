import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * job_effects: the handler kit's effect records (ctx.effects.once), for effects outside
 * Postgres that cannot take an idempotency key (an SMTP send). A record is claimed, committed,
 * before the call and marked done after it, so a second run of the job finds it and does not
 * call again. ledger_balances: the example `ledger-transfer` kind's accounts.
 */
export class JobEffectsAndLedger1764400040000 implements MigrationInterface {
  name = 'JobEffectsAndLedger1764400040000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE job_effects (
      tenant_id integer NOT NULL,
      effect_key text NOT NULL,
      job_id bigint NOT NULL,
      claimed_at timestamptz NOT NULL,
      done_at timestamptz,
      result jsonb,
      PRIMARY KEY (tenant_id, effect_key)
    )`);
    await q.query(`CREATE TABLE ledger_balances (
      tenant_id integer NOT NULL,
      account text NOT NULL,
      balance_cents bigint NOT NULL,
      PRIMARY KEY (tenant_id, account)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ledger_balances`);
    await q.query(`DROP TABLE job_effects`);
  }
}
