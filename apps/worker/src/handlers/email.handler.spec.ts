import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { emailHandler } from './email.handler';

/** A real SMTP server (smtp-server, from the npm registry) on a free port, keeping what it receives. */
async function startSmtp(): Promise<{ port: number; messages: string[]; close(): Promise<void> }> {
  const messages: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
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
  return { port, messages, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('email', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  beforeAll(async () => {
    smtp = await startSmtp();
  });
  afterAll(() => smtp.close());

  it('sends one message through SMTP, with a Message-ID derived from the job', async () => {
    const handler = emailHandler({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com', messageIdHost: 'test.almanac' });
    const before = smtp.messages.length;
    const report = await runTwice(handler, { to: 'ada@example.com', subject: 'Your invoice', text: 'Hello' }, {
      mode: 'concurrent',
      effects: async () => smtp.messages.length - before,
    });
    expect(report.effects).toBe(1);
    const raw = smtp.messages.at(-1) as string;
    expect(raw).toMatch(/^To: ada@example.com$/m);
    expect(raw).toMatch(/^Subject: Your invoice$/m);
    expect(raw).toMatch(/^Message-ID: <1\.k-[^@]+@test\.almanac>$/m);
  });

  // The effect as the recipient sees it: messages, told apart by Message-ID (mail clients fold
  // copies with one Message-ID into one). A worker killed between the server's answer and the
  // record makes a second copy (crash-after-effect strikes exactly there); nothing else may.
  it.each(DOUBLE_RUN_MODES)('delivers exactly one message when the job runs twice (%s): the effect record is checked before the send', async (mode) => {
    const handler = emailHandler({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from: 'almanac@example.com' });
    const before = smtp.messages.length;
    const received = () => smtp.messages.slice(before);
    await runTwice(handler, { to: ['ada@example.com', 'bob@example.com'], subject: `double run ${mode}`, text: 'once' }, {
      mode,
      effects: async () => new Set(received().map((raw) => /^Message-ID: (.+)$/m.exec(raw)?.[1])).size,
    });
    // The record kept every other second run from sending at all.
    expect(received().length).toBe(mode === 'concurrent' ? 1 : 2);
  });
});
