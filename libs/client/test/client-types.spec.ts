import { join } from 'node:path';
import { markedLines, typeCheck } from './type-check';

// @almanac/client as a consumer compiles it: payloads checked against their kind, the built-in
// kinds by default and a team's own added through the type parameter.
const SAMPLE = join(__dirname, 'sample.ts');

const HEAD = `
import { createClient, type BuiltInKindPayloads, type AnyKindPayloads } from '../src';
const runAt = '2026-11-30T09:00:00Z';
const client = createClient({ baseUrl: 'http://localhost:3000', apiKey: 'alm_x' });
`;

const CORRECT = `${HEAD}
export async function sample(): Promise<void> {
  const { created, job } = await client.jobs.create({ kind: 'http', key: 'hook:1', runAt, payload: { url: 'https://hooks.acme.com/x', body: [1, 2] } });
  await client.jobs.create({ kind: 'charge', key: 'inv:1', runAt: new Date(), payload: { invoiceId: 'inv_1', amountCents: 1299 } });
  await client.jobs.create({ kind: 'noop', key: 'ping', runAt });
  await client.jobs.create({ kind: 'email', key: 'welcome:1', runAt, payload: { to: ['a@acme.com'], subject: 'Hi', text: 'Welcome' } });
  await client.jobs.batch([{ kind: 'ledger-transfer', key: 'move:1', runAt, payload: { from: 'a', to: 'b', amountCents: 1 } }]);
  for await (const dead of client.jobs.iterate({ state: 'dead' })) void dead.key;
  await client.jobs.reschedule(job.id, new Date());
  await client.schedules.create({ kind: 'http', key: 'nightly', cron: '0 2 * * *', timezone: 'Europe/Berlin', payload: { url: 'https://x.acme.com' } });
  await client.schedules.update('1', { kind: 'charge', payload: { invoiceId: 'inv_2', amountCents: 5 } });
  const own = createClient<BuiltInKindPayloads & { 'resize-image': { url: string; width: number } }>({ baseUrl: '', apiKey: '' });
  await own.jobs.create({ kind: 'resize-image', key: 'img:1', runAt, payload: { url: 'https://img', width: 640 } });
  const loose = createClient<AnyKindPayloads>({ baseUrl: '', apiKey: '' });
  await loose.jobs.create({ kind: 'anything', key: 'k', runAt, payload: { any: ['json'] } });
  void created;
}
`;

const WRONG = `${HEAD}
export async function mistakes(): Promise<void> {
  await client.jobs.create({ kind: 'http', key: 'a', runAt, payload: { uri: 'https://hooks.acme.com' } }); // rejected
  await client.jobs.create({ kind: 'charge', key: 'b', runAt, payload: { invoiceId: 'inv_1', amountCents: '12.99' } }); // rejected
  await client.jobs.create({ kind: 'charge', key: 'c', runAt }); // rejected
  await client.jobs.create({ kind: 'no-such-kind', key: 'd', runAt }); // rejected
  await client.jobs.batch([{ kind: 'ledger-transfer', key: 'e', runAt, payload: { from: 'a', to: 'b' } }]); // rejected
  await client.schedules.create({ kind: 'charge', key: 'f', cron: '0 2 * * *', timezone: 'UTC', payload: { invoiceId: 1 } }); // rejected
  await client.jobs.iterate({ state: 'failed' }).next(); // rejected
  await client.jobs.create({ kind: 'email', key: 'g', runAt, payload: { to: 'a@acme.com', text: 'no subject' } }); // rejected
}
`;

describe('@almanac/client types', () => {
  it('accept payloads that match their kind, Dates for run times, and a team\'s own kinds', () => {
    expect(typeCheck({ [SAMPLE]: CORRECT }, ['node'])).toEqual([]);
  });

  it('reject a payload that does not match its kind, a missing required payload and an unknown kind', () => {
    const problems = typeCheck({ [SAMPLE]: WRONG }, ['node']);
    expect(problems.filter((p) => p.file !== SAMPLE)).toEqual([]);
    expect([...new Set(problems.map((p) => p.line))]).toEqual(markedLines(WRONG, '// rejected'));
  });
});
