import { completed, defineHandler, discard, retry, snooze } from '@almanac/kinds';
import { type Static, Type } from '@sinclair/typebox';
import { createTransport, type Transporter } from 'nodemailer';
import type { TenantOutboundSource } from './tenant-outbound';

/**
 * `email`: sends one message through SMTP (nodemailer). SMTP takes no idempotency key, so the
 * send is guarded by an effect record (`ctx.effects.once`): claimed and committed before the
 * send, marked done with the server's answer after it. A second run of the job (a retry, a
 * duplicate delivery) finds the record and does not send again; a record that fails is written
 * again while the claim holds. What a record cannot cover is a worker that dies between the
 * server's 250 and the record, or a record still failing when the claim goes stale (the kind's
 * timeout plus 30 s): the message is then sent again. The Message-ID is derived from
 * the job (`<tenant.jobId@host>`), so that second copy carries the same Message-ID, which mail
 * clients fold into one message: one message, as the recipient sees it.
 * The record and the Message-ID go by the job's id, the same on every run, retry and rescue of
 * the job and never another's: a key freed by retention (`keysAfterRetention: "freed"`) may name
 * a new job while the old job's record still stands, and that job's message must go out.
 *
 * An `smtp://` server must start TLS (STARTTLS) before AUTH and the message, unless
 * ALMANAC_SMTP_ALLOW_PLAINTEXT says otherwise: an on-path attacker who strips STARTTLS from the
 * server's EHLO would otherwise get the password and every tenant's mail in cleartext.
 *
 * A tenant's message goes out under the installation's From address, so only a tenant an
 * operator allowed (`emailAllowed`, set by `PATCH /v1/admin/tenants/:id`) sends any: another's
 * job is discarded, nothing sent (as the `http` kind discards a URL off the tenant's list).
 *
 * Payload: `{ "to": "a@example.com", "subject": "…", "text": "…", "html"?: "…" }`.
 */
export const EmailPayloadSchema = Type.Object(
  {
    to: Type.Union([Type.String({ format: 'email' }), Type.Array(Type.String({ format: 'email' }), { minItems: 1, maxItems: 50 })]),
    subject: Type.String({ minLength: 1, maxLength: 998 }),
    text: Type.String({ maxLength: 1_000_000 }),
    html: Type.Optional(Type.String({ maxLength: 1_000_000 })),
  },
  { additionalProperties: false },
);
export type EmailPayload = Static<typeof EmailPayloadSchema>;

export interface EmailHandlerOptions {
  /** SMTP server URL, e.g. `smtp://user:pass@mail.example.com:587` (ALMANAC_SMTP_URL). */
  smtpUrl: string;
  /** The From address (ALMANAC_EMAIL_FROM). */
  from: string;
  /** Send over a server that does not start TLS (ALMANAC_SMTP_ALLOW_PLAINTEXT); default false. */
  allowPlaintext?: boolean;
  /** Host part of generated Message-IDs. */
  messageIdHost?: string;
  timeoutMs?: number;
  /** Each tenant's `emailAllowed` (Postgres, cached; the `http` kind's reader). */
  tenants: TenantOutboundSource;
}

export function emailHandler(opts: EmailHandlerOptions) {
  let transport: Transporter | undefined;
  const host = opts.messageIdHost ?? 'almanac.invalid';
  return defineHandler<EmailPayload>({
    kind: 'email',
    timeoutMs: opts.timeoutMs ?? 30_000,
    pool: 'default',
    payloadSchema: EmailPayloadSchema,
    async handle(ctx, payload) {
      // SMTP timeouts inside the kind's own, so a hung server fails the send (and releases its
      // claim) before the run is aborted; nodemailer's defaults are minutes. They bound each step,
      // not the send: a server slow at every step is cut off by the run's signal (the connection
      // closed), or the send would go on past the run and the retry's takeover send it again.
      const timeoutMs = opts.timeoutMs ?? 30_000;
      transport ??= createTransport(
        {
          url: opts.smtpUrl,
          requireTLS: !opts.allowPlaintext, // smtps:// is TLS from the first byte; this is for smtp://
          connectionTimeout: Math.floor(timeoutMs / 3),
          greetingTimeout: Math.floor(timeoutMs / 3),
          socketTimeout: Math.floor(timeoutMs / 2),
        },
        { from: opts.from },
      );
      const messageId = `<${ctx.tenantId}.${ctx.jobId}@${host}>`;
      let sent;
      try {
        sent = await ctx.effects.once(`email:${ctx.jobId}`, async () => {
          // Asked inside the claim: a message an earlier run sent completes as sent (the record
          // answers before this), one another run is sending is waited for, whatever the permission is now.
          const refused = await refusal(opts.tenants, ctx.tenantId);
          if (refused) throw new NotAllowed(refused);
          const info = await transport!.sendMail({ ...payload, messageId, signal: ctx.signal });
          // Not the server's reply: a relay's names its internal host ("Hostname=EXCH01.corp.local"), and the result is the tenant's.
          return { messageId: info.messageId };
        });
      } catch (err) {
        if (err instanceof NotAllowed) return discard(err.message);
        if ((err as { code?: unknown }).code !== 'ETLS') throw err;
        // Nothing was sent: nodemailer stops before AUTH and MAIL when TLS does not start. The
        // error's text (the server's reply, a certificate's names) is the operator's, not the tenant's.
        ctx.logger.warn({ err }, 'the SMTP server did not start TLS (or its certificate was refused): nothing was sent in plaintext; ALMANAC_SMTP_ALLOW_PLAINTEXT=true allows a server without TLS');
        return retry({ reason: "the SMTP server did not start TLS: nothing was sent (the operator's log says why)" });
      }
      if (sent.busy) return snooze({ delayMs: sent.retryAfterMs, reason: 'this message is being sent by another run' });
      return completed({ messageId: sent.result.messageId, alreadySent: !sent.ran });
    },
  });
}

/** Thrown inside the effect's claim (given back, nothing sent) when the tenant may not send email. */
class NotAllowed extends Error {}

/** Why `tenantId` may not send email, or null when it may. */
async function refusal(tenants: TenantOutboundSource, tenantId: number): Promise<string | null> {
  const tenant = await tenants.get(tenantId);
  if (!tenant) return `tenant ${tenantId} does not exist`;
  if (!tenant.emailAllowed) return `this tenant may not send email (emailAllowed is false): an operator allows it with PATCH /v1/admin/tenants/${tenantId}`;
  return null;
}
