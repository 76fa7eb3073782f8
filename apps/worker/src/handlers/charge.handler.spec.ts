import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { chargeHandler } from './charge.handler';

describe('charge', () => {
  it.each(DOUBLE_RUN_MODES)('charges the invoice exactly once when the job runs twice (%s)', async (mode) => {
    await runTwice(chargeHandler, { invoiceId: `inv-${mode}`, amountCents: 1299 }, {
      mode,
      effects: async (h) => (await h.ds.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM charges WHERE invoice_id = $1`, [`inv-${mode}`]))[0].n,
    });
  });
});
