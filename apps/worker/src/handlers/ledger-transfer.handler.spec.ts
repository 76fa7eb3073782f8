import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { ledgerTransferHandler } from './ledger-transfer.handler';

describe('ledger-transfer', () => {
  it.each(DOUBLE_RUN_MODES)('moves the amount exactly once when run twice (%s), by the completion guard alone', async (mode) => {
    const report = await runTwice(ledgerTransferHandler, { from: 'acct-a', to: 'acct-b', amountCents: 250 }, {
      mode,
      setup: (h) => h.ds.query(`INSERT INTO ledger_balances (tenant_id, account, balance_cents) VALUES (1, 'acct-a', 1000), (1, 'acct-b', 0)`),
      // Each transfer that landed moved 250 out of acct-a; the books must still balance.
      effects: async (h) => {
        const rows: { account: string; balance: number }[] = await h.ds.query(`SELECT account, balance_cents::int AS balance FROM ledger_balances ORDER BY account`);
        if (rows[0].balance + rows[1].balance !== 1000) throw new Error(`the books do not balance: ${JSON.stringify(rows)}`);
        return (1000 - rows[0].balance) / 250;
      },
    });
    expect(report.state).toBe('d');
  });
});
