import { completed, defineHandler } from '@almanac/kinds';
import { type Static, Type } from '@sinclair/typebox';
import { Charges1796400000100 } from './charges.migration';

/**
 * The template for business handlers: an effect that must happen once per thing, recorded in
 * the same transaction as the job's completion.
 *
 * 1. The effect is a row keyed by what it is *for* (tenant, invoice), with a UNIQUE constraint
 *    (charges.migration.ts, the kind's own migration): the database, not the code, refuses a second charge.
 * 2. It is written through `ctx.tx()`. That transaction commits only if this delivery is still
 *    the current attempt when the handler returns; a duplicate or stale delivery rolls back.
 * 3. `ON CONFLICT DO NOTHING` turns "already charged" into a normal, successful outcome: a
 *    second delivery that gets this far (for example after the first one's worker died after
 *    committing) finds the row and completes without charging again.
 * 4. A call to an outside system goes *before* the insert only if that system takes an
 *    idempotency key (`${ctx.tenantId}:${ctx.key}`); otherwise record intent here and let a
 *    separate job carry it out.
 *
 * Payload: `{ "invoiceId": "inv_2026_11", "amountCents": 1299 }`.
 */
export const ChargePayloadSchema = Type.Object(
  {
    invoiceId: Type.String({ minLength: 1, maxLength: 200 }),
    amountCents: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
);
export type ChargePayload = Static<typeof ChargePayloadSchema>;

export const chargeHandler = defineHandler<ChargePayload>({
  kind: 'charge',
  timeoutMs: 10_000,
  pool: 'default',
  payloadSchema: ChargePayloadSchema,
  migrations: [Charges1796400000100],
  async handle(ctx, payload) {
    const tx = await ctx.tx();
    const inserted: { job_id: string }[] = await tx.query(
      `INSERT INTO charges (tenant_id, invoice_id, amount_cents, job_id)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, invoice_id) DO NOTHING
       RETURNING job_id::text AS job_id`,
      [ctx.tenantId, payload.invoiceId, payload.amountCents, ctx.jobId],
    );
    if (inserted.length === 1) {
      ctx.logger.info({ invoiceId: payload.invoiceId }, 'charged');
      return completed({ charged: true });
    }
    ctx.logger.info({ invoiceId: payload.invoiceId }, 'invoice already charged; nothing to do');
    return completed({ charged: false, alreadyCharged: true });
  },
});
