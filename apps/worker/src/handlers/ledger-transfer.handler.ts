import { completed, defineHandler, discard } from '@almanac/kinds';
import { type Static, Type } from '@sinclair/typebox';
import { LedgerBalances1796400000200 } from './ledger-balances.migration';

/**
 * `ledger-transfer`: moves an amount between two of the tenant's balances with two plain
 * UPDATEs in the job's transaction. There is no unique key to lean on: a second run would move
 * the money again. Only the completion guard keeps it exactly-once: `ctx.tx()` commits with the
 * job's completion, and only while this delivery is still the job's current attempt, so a
 * duplicate, stale or crashed run rolls back (proven by the double-run kit in its spec).
 *
 * Payload: `{ "from": "acct-a", "to": "acct-b", "amountCents": 2500 }`. An unknown account or an
 * insufficient balance discards the job: retrying would not help.
 */
export const LedgerTransferPayloadSchema = Type.Object(
  {
    from: Type.String({ minLength: 1, maxLength: 100 }),
    to: Type.String({ minLength: 1, maxLength: 100 }),
    amountCents: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
);
export type LedgerTransferPayload = Static<typeof LedgerTransferPayloadSchema>;

export const ledgerTransferHandler = defineHandler<LedgerTransferPayload>({
  kind: 'ledger-transfer',
  timeoutMs: 10_000,
  payloadSchema: LedgerTransferPayloadSchema,
  migrations: [LedgerBalances1796400000200],
  async handle(ctx, { from, to, amountCents }) {
    if (from === to) return discard('from and to are the same account');
    const tx = await ctx.tx();
    // Lock both rows in one order (by account) so two transfers between the same pair never deadlock.
    const locked: { account: string; balance_cents: string }[] = await tx.query(
      `SELECT account, balance_cents FROM ledger_balances WHERE tenant_id = $1 AND account = ANY($2::text[]) ORDER BY account FOR UPDATE`,
      [ctx.tenantId, [from, to]],
    );
    const balance = new Map(locked.map((r) => [r.account, BigInt(r.balance_cents)]));
    if (!balance.has(from) || !balance.has(to)) return discard(`unknown account ${balance.has(from) ? to : from}`);
    if ((balance.get(from) as bigint) < BigInt(amountCents)) return discard(`insufficient balance in ${from}`);
    await tx.query(`UPDATE ledger_balances SET balance_cents = balance_cents - $3 WHERE tenant_id = $1 AND account = $2`, [ctx.tenantId, from, amountCents]);
    await tx.query(`UPDATE ledger_balances SET balance_cents = balance_cents + $3 WHERE tenant_id = $1 AND account = $2`, [ctx.tenantId, to, amountCents]);
    return completed({ moved: amountCents });
  },
});
