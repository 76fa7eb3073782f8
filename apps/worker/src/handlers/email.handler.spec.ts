import type { HandlerDefinition } from '@almanac/kinds';
import { EffectsRepository, RetentionRepository, TenantOutboundRepository, TenantsRepository } from '@almanac/persistence';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { type AddressInfo, createServer } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import type { DataSource } from 'typeorm';
import { emailHandler, type EmailHandlerOptions } from './email.handler';
import { TENANT_OUTBOUND_CACHE, TenantOutboundCache } from './tenant-outbound';

/** The running harness's database, where the handler reads tenants' rules (set as each harness starts). */
let ds: DataSource | undefined;

/** The handler as the worker builds it, reading tenants' rules from the harness's database (no cache delay). */
const mailer = (opts: Omit<EmailHandlerOptions, 'tenants'>) =>
  emailHandler({ ...opts, tenants: new TenantOutboundCache((id) => new TenantOutboundRepository(ds!).forDelivery(id), { ...TENANT_OUTBOUND_CACHE, ttlMs: 0 }) });

/** Tenant 1 (the harness's default), which an operator allowed to send email unless `emailAllowed` is false. */
async function prepareTenant(h: DeliveryHarness, emailAllowed = true): Promise<void> {
  ds = h.ds;
  const { tenant } = await new TenantsRepository(h.ds).create('acme');
  await new TenantOutboundRepository(h.ds).setEmailAllowed(tenant.id, emailAllowed);
}

/** A harness running `handler`, with tenant 1 prepared. */
async function harness(handler: HandlerDefinition, emailAllowed = true): Promise<DeliveryHarness> {
  const h = await createHarness({ handlers: [handler] });
  await prepareTenant(h, emailAllowed);
  return h;
}

/**
 * A real SMTP server (smtp-server, from the npm registry) on a free port, keeping what it
 * receives and whether each AUTH came over TLS. Plaintext unless `options` says otherwise (its
 * STARTTLS uses smtp-server's own self-signed certificate).
 */
async function startSmtp(options: SMTPServerOptions = {}): Promise<{ port: number; messages: string[]; authsSecure: boolean[]; close(): Promise<void> }> {
  const messages: string[] = [];
  const authsSecure: boolean[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    ...options,
    onAuth(auth, session, done) {
      authsSecure.push(session.secure);
      done(null, { user: auth.username });
    },
    onData(stream, _session, done) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString()));
      stream.on('end', () => {
        messages.push(raw);
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, messages, authsSecure, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Enqueues one email job (tenant 1) and runs it to its outcome; the job's row. */
async function sendOne(h: DeliveryHarness, payload: object, key?: string) {
  const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 1, payload, ...(key ? { key } : {}) }]);
  await h.hot.runOnce();
  await h.runWorker(h.worker());
  return h.job(id);
}

/** An SMTP server that answers each RCPT TO after `delayMs`: every step within nodemailer's timeouts, the whole send past the run's. */
async function startSlowSmtp(delayMs: number) {
  const messages: string[] = [];
  let closed!: () => void;
  const connectionClosed = new Promise<void>((r) => (closed = r));
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onRcptTo: (_address, _session, done) => void setTimeout(() => done(), delayMs),
    onData(stream, _session, done) {
      stream.on('data', () => undefined).on('end', () => (messages.push('message'), done()));
    },
    onClose: () => closed(),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, messages, connectionClosed, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('email', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  beforeAll(async () => {
    smtp = await startSmtp();
  });
  afterAll(() => smtp.close());

  it('sends one message through SMTP, with a Message-ID derived from the job', async () => {
    const handler = mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', messageIdHost: 'test.almanac', allowPlaintext: true });
    const before = smtp.messages.length;
    const report = await runTwice(handler, { to: 'ada@example.com', subject: 'Your invoice', text: 'Hello' }, {
      mode: 'concurrent',
      setup: (h) => prepareTenant(h),
      effects: async () => smtp.messages.length - before,
    });
    expect(report.effects).toBe(1);
    const raw = smtp.messages.at(-1) as string;
    expect(raw).toMatch(/^To: ada@example.com$/m);
    expect(raw).toMatch(/^Subject: Your invoice$/m);
    expect(raw).toMatch(/^Message-ID: <1\.\d+@test\.almanac>$/m); // <tenant.jobId@host>
  });

  it("discards, sending nothing, a job of a tenant the operator has not allowed to send email; sends once it is allowed", async () => {
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext: true }), false);
    try {
      const before = smtp.messages.length;
      const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 5, payload: { to: 'victim@example.com', subject: 'Reset your password', text: 'phish' } }]);
      await h.hot.runOnce();
      await h.runWorker(h.worker());
      // Dead at the first attempt (retrying cannot help), the reason naming the setting.
      expect(await h.job(id)).toMatchObject({
        state: 'x', attempts: 1,
        last_error: 'this tenant may not send email (emailAllowed is false): an operator allows it with PATCH /v1/admin/tenants/1',
      });
      expect(smtp.messages.length).toBe(before);
      expect(await h.ds.query(`SELECT 1 FROM job_effects`)).toEqual([]); // its claim given back

      await new TenantOutboundRepository(h.ds).setEmailAllowed(1, true);
      expect(await sendOne(h, { to: 'ada@example.com', subject: 'allowed now', text: 'hi' })).toMatchObject({ state: 'd' });
      expect(smtp.messages.length - before).toBe(1);
    } finally {
      await destroyHarness(h);
    }
  });

  it('completes as sent a job whose message an earlier run sent, though the operator has since stopped the tenant sending', async () => {
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext: true }), false);
    try {
      const before = smtp.messages.length;
      const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 3, payload: { to: 'ada@example.com', subject: 'sent', text: 'once' } }]);
      // The earlier run sent it and recorded so; its completion was lost (a worker killed).
      await h.ds.query(`INSERT INTO job_effects (tenant_id, effect_key, job_id, claimed_at, done_at, result) VALUES (1, $1, $2, now(), now(), $3)`, [
        `email:${id}`, id, JSON.stringify({ messageId: `<1.${id}@test.almanac>` }),
      ]);
      await h.hot.runOnce();
      await h.runWorker(h.worker());
      expect(await h.job(id)).toMatchObject({ state: 'd', result: { alreadySent: true } }); // discarded as "nothing sent" before
      expect(smtp.messages.length).toBe(before);
    } finally {
      await destroyHarness(h);
    }
  });

  it('stops sending when its run is aborted: a server slow at every step gets no message after the run ended', async () => {
    const slow = await startSlowSmtp(1000);
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${slow.port}`, from: 'almanac@example.com', timeoutMs: 2500, allowPlaintext: true }));
    try {
      const to = ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com']; // 4 s of RCPTs against a 2.5 s run
      const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 1, payload: { to, subject: 'slow', text: 'once' } }]);
      await h.hot.runOnce();
      await h.runWorker(h.worker());
      expect(await h.job(id)).toMatchObject({ state: 'x', attempts: 1 }); // timed out
      await slow.connectionClosed; // at the abort; without the signal, after the send went through
      expect(slow.messages).toEqual([]);
    } finally {
      await destroyHarness(h);
      await slow.close();
    }
  });

  it('snoozes, sending nothing and spending no attempt, while another run holds the message', async () => {
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext: true }));
    try {
      const before = smtp.messages.length;
      const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 1, payload: { to: 'ada@example.com', subject: 'held', text: 'once' } }]);
      // Another job's run claimed this message 5 s ago and has not finished.
      await h.ds.query(`INSERT INTO job_effects (tenant_id, effect_key, job_id, claimed_at) VALUES (1, $1, $2, now() - interval '5 seconds')`, [`email:${id}`, id]);
      const w = h.worker();
      await h.hot.runOnce();
      await h.runWorker(w);
      const row = await h.job(id);
      expect(row).toMatchObject({ state: 'q', attempts: 1, last_error: 'this message is being sent by another run' });
      // Back when that claim goes stale: the kind's timeout plus 30 s after it was taken.
      expect(row.run_at.getTime() - Date.now()).toBeGreaterThan(30_000);
      expect(row.run_at.getTime() - Date.now()).toBeLessThanOrEqual(35_000);
      expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['snoozed']);
      const [{ max_attempts }] = await h.ds.query(`SELECT max_attempts FROM jobs WHERE id = $1`, [id]);
      expect(max_attempts).toBe(2);
      expect(smtp.messages.length).toBe(before);
    } finally {
      await destroyHarness(h);
    }
  });

  it('sends once when recording the send fails at first: the record is written again, not the message sent again', async () => {
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext: true }));
    // The server answered 250; then the record's first write fails, as a pool acquire timeout under load does.
    const finish = jest.spyOn(EffectsRepository.prototype, 'finish').mockRejectedValueOnce(new Error('timeout exceeded when trying to connect'));
    try {
      const before = smtp.messages.length;
      const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 2, payload: { to: 'ada@example.com', subject: 'recorded late', text: 'once' } }]);
      await h.hot.runOnce();
      await h.runWorker(h.worker());
      expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1, result: { alreadySent: false } });
      expect(finish).toHaveBeenCalledTimes(2);
      const [{ done }] = await h.ds.query(`SELECT done_at IS NOT NULL AS done FROM job_effects WHERE job_id = $1`, [id]);
      expect(done).toBe(true); // so no later run sends it again
      expect(smtp.messages.length - before).toBe(1);
    } finally {
      finish.mockRestore();
      await destroyHarness(h);
    }
  });

  it('does not write again a record Postgres refuses on a value: no retry can store it, so the run ends at once', async () => {
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext: true }));
    const refused = Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
    const finish = jest.spyOn(EffectsRepository.prototype, 'finish').mockRejectedValueOnce(refused);
    try {
      const [id] = await h.enqueue([{ kind: 'email', maxAttempts: 2, payload: { to: 'ada@example.com', subject: 'refused', text: 'once' } }]);
      await h.hot.runOnce();
      await h.runWorker(h.worker());
      expect(finish).toHaveBeenCalledTimes(1); // not again until the claim went stale (the kind's timeout + 30 s)
      expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('unsupported Unicode escape') });
    } finally {
      finish.mockRestore();
      await destroyHarness(h);
    }
  });

  it('sends nothing, and no password, to a server that does not start TLS unless ALMANAC_SMTP_ALLOW_PLAINTEXT says so', async () => {
    // What an on-path attacker makes of a server: STARTTLS stripped from its EHLO.
    const stripped = await startSmtp({ disabledCommands: ['STARTTLS'] });
    const secured = await startSmtp({ disabledCommands: [], logger: false }); // its known test certificate, no warning
    const handler = (url: string, allowPlaintext?: boolean) => mailer({ smtpUrl: url, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext });
    let h = await harness(handler(`smtp://almanac:hunter2@127.0.0.1:${stripped.port}`));
    try {
      const refused = await sendOne(h, { to: 'ada@example.com', subject: 'stripped', text: 'secret' });
      expect(refused).toMatchObject({ state: 'x', attempts: 1, last_error: expect.stringContaining('the SMTP server did not start TLS') });
      expect(refused.last_error).toContain("nothing was sent (the operator's log says why)"); // not the server's reply: the error is the tenant's
      expect(stripped.authsSecure).toEqual([]); // no AUTH (the password) in plaintext
      expect(stripped.messages).toEqual([]);

      // A server that starts TLS (the test trusts its self-signed certificate through the URL): AUTH and the message go encrypted.
      await destroyHarness(h);
      h = await harness(handler(`smtp://almanac:hunter2@127.0.0.1:${secured.port}?tls.rejectUnauthorized=false`));
      expect(await sendOne(h, { to: 'ada@example.com', subject: 'secured', text: 'secret' })).toMatchObject({ state: 'd' });
      expect(secured.authsSecure).toEqual([true]);
      expect(secured.messages).toHaveLength(1);

      // The operator's explicit choice: plaintext.
      await destroyHarness(h);
      h = await harness(handler(`smtp://almanac:hunter2@127.0.0.1:${stripped.port}`, true));
      expect(await sendOne(h, { to: 'ada@example.com', subject: 'allowed', text: 'plain' })).toMatchObject({ state: 'd' });
      expect(stripped.authsSecure).toEqual([false]);
      expect(stripped.messages).toHaveLength(1);
    } finally {
      await destroyHarness(h);
      await stripped.close();
      await secured.close();
    }
  });

  it("tells the tenant that TLS did not start, not the relay's reply (its internal host and address)", async () => {
    // A relay that offers STARTTLS and then refuses it, naming itself.
    const relay = createServer((socket) => {
      socket.write('220 mx1.corp.internal ESMTP\r\n');
      socket.on('data', (b: Buffer) => {
        const line = b.toString();
        if (/^EHLO/i.test(line)) socket.write('250-mx1.corp.internal\r\n250 STARTTLS\r\n');
        else if (/^STARTTLS/i.test(line)) socket.write('454 4.7.0 TLS not available on mx1.corp.internal (10.20.3.4)\r\n');
        else if (/^QUIT/i.test(line)) socket.end('221 bye\r\n');
      });
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const port = (relay.address() as AddressInfo).port;
    const h = await harness(mailer({ smtpUrl: `smtp://almanac:hunter2@127.0.0.1:${port}`, from: 'almanac@example.com', timeoutMs: 10_000 }));
    try {
      const refused = await sendOne(h, { to: 'ada@example.com', subject: 'relay', text: 't' });
      expect(refused.last_error).toContain('the SMTP server did not start TLS');
      expect(refused.last_error).not.toMatch(/10\.20\.3\.4|corp\.internal|454/);
    } finally {
      await destroyHarness(h);
      await new Promise<void>((r) => relay.close(() => r()));
    }
  });

  it('sends the message of a new job that takes a key retention freed, though the old job’s effect record still stands', async () => {
    const h = await harness(mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', timeoutMs: 10_000, allowPlaintext: true }));
    try {
      const before = smtp.messages.length;
      const payload = { to: 'ada@example.com', subject: 'November statement', text: 'due' };
      expect(await sendOne(h, payload, 'statement')).toMatchObject({ state: 'd', result: { alreadySent: false } });
      // Retention with keysAfterRetention "freed": the job goes and its key is free at once; its
      // effect record expires apart (every 10 minutes, capped), so it is still there.
      const retention = new RetentionRepository(h.ds);
      await new TenantsRepository(h.ds).updateRetention(1, { keysAfterRetention: 'freed' }); // read by the removal itself
      const removed = await retention.removeExpired({ tenantId: 1, retentionSeconds: 0, freesKeys: true, keyReservation: 0 }, new Date(Date.now() + 60_000), 100, '2026-12-07');
      expect(removed.removed).toBe(1);
      expect(await h.ds.query(`SELECT 1 FROM job_effects`)).toHaveLength(1);

      const again = await sendOne(h, payload, 'statement');
      expect(again).toMatchObject({ state: 'd', result: { alreadySent: false } });
      expect(smtp.messages.length - before).toBe(2);
      // And as its own message, not a copy a mail client folds into the first.
      const ids = smtp.messages.slice(before).map((raw) => /^Message-ID: (.+)$/m.exec(raw)?.[1]);
      expect(new Set(ids).size).toBe(2);
    } finally {
      await destroyHarness(h);
    }
  });

  // The effect as the recipient sees it: messages, told apart by Message-ID (mail clients fold
  // copies with one Message-ID into one). A worker killed between the server's answer and the
  // record makes a second copy (crash-after-effect strikes exactly there); nothing else may.
  it.each(DOUBLE_RUN_MODES)('delivers exactly one message when the job runs twice (%s): the effect record is checked before the send', async (mode) => {
    const handler = mailer({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', allowPlaintext: true });
    const before = smtp.messages.length;
    const received = () => smtp.messages.slice(before);
    await runTwice(handler, { to: ['ada@example.com', 'bob@example.com'], subject: `double run ${mode}`, text: 'once' }, {
      mode,
      setup: (h) => prepareTenant(h),
      effects: async () => new Set(received().map((raw) => /^Message-ID: (.+)$/m.exec(raw)?.[1])).size,
    });
    // The record kept every other second run from sending at all.
    expect(received().length).toBe(mode === 'concurrent' ? 1 : 2);
  });
});
