import { join } from 'node:path';
import { markedLines, typeCheck } from './type-check';

// A consumer of the OpenAPI document alone: only openapi-typescript's output (src/generated/
// openapi.ts, made from the live document and kept current by apps/api/test/openapi-document.spec.ts)
// and a typed request function of the kind openapi-fetch builds from it. Nothing of @almanac/client.
const SAMPLE = join(__dirname, '../src/generated/sample.ts');

const HELPERS = `
import type { paths } from './openapi';

type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type Op<P extends keyof paths, M extends 'get' | 'post' | 'patch'> = NonNullable<paths[P][M]>;
type BodyOf<O> = O extends { requestBody?: infer R } ? JsonOf<NonNullable<R>> : never;
type AnswerOf<O> = O extends { responses: infer R } ? JsonOf<R[keyof R & (200 | 201 | 202)]> : never;
type PathOf<O> = O extends { parameters: { path: infer X } } ? X : never;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

declare function post<P extends keyof paths>(path: P, body: BodyOf<Op<P, 'post'>>): Promise<AnswerOf<Op<P, 'post'>>>;
declare function patch<P extends keyof paths>(path: P, params: PathOf<Op<P, 'patch'>>, body: BodyOf<Op<P, 'patch'>>): Promise<AnswerOf<Op<P, 'patch'>>>;
declare function get<P extends keyof paths>(path: P, query: QueryOf<Op<P, 'get'>>): Promise<AnswerOf<Op<P, 'get'>>>;
`;

const CORRECT = `${HELPERS}
export async function usesEveryBuiltInKind(): Promise<void> {
  const runAt = '2026-11-30T09:00:00+01:00';
  const created = await post('/v1/jobs', {
    kind: 'charge', key: 'invoice:2026-11:customer-42', runAt, maxAttempts: 5,
    payload: { invoiceId: 'inv_2026_11_42', amountCents: 1299 },
  });
  // 200 may also be a removed job's key (a create with "replay": "result"): narrowed by its field.
  if ('removed' in created) throw new Error('key reserved since ' + created.removedOn);
  const id: string = created.id;
  const batch = await post('/v1/jobs/batch', {
    jobs: [
      { kind: 'http', key: 'hook:42', runAt, payload: { url: 'https://hooks.acme.com/invoice', body: { invoice: 42, lines: [1, 2] }, headers: { 'X-Team': 'billing' } } },
      { kind: 'ledger-transfer', key: 'move:7', runAt, payload: { from: 'acct-a', to: 'acct-b', amountCents: 2500 } },
      { kind: 'noop', key: 'ping:1', runAt, payload: { sleepMs: 50, note: 'any other JSON is fine for noop' } },
      { kind: 'noop', key: 'ping:2', runAt, payload: [1, 'two', null] },
      { kind: 'noop', key: 'ping:3', runAt },
    ],
  });
  const counts: number = batch.created + batch.existing + batch.errors;
  const page = await get('/v1/jobs', { state: 'dead', kind: 'charge', cursor: 'WyIyMDI2Il0' });
  // 200 is a page, or with key the one job (JobDetail): narrowed by its field.
  if (!('items' in page)) throw new Error('a page was asked for');
  const states: ('scheduled' | 'queued' | 'running' | 'succeeded' | 'dead' | 'cancelled')[] = page.items.map((j) => j.state);
  const next: string | null = page.nextCursor;
  const moved = await patch('/v1/jobs/{id}', { id }, { runAt: '2026-12-24T18:00:00Z' });
  const tier: 'immediate' | 'hot' | 'cold' = moved.tier;
  const schedule = await post('/v1/schedules', {
    kind: 'http', key: 'weekday-report', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', missed: 'latest',
    payload: { url: 'https://reports.acme.com/run' },
  });
  const version: number = schedule.version;
  void [counts, states, next, tier, version];
}
`;

const WRONG = `${HELPERS}
export async function mistakes(): Promise<void> {
  const runAt = '2026-11-30T09:00:00Z';
  await post('/v1/jobs', { kind: 'charge', key: 'a', runAt, payload: { invoiceId: 'inv_1', amountCents: '12.99' } }); // rejected
  await post('/v1/jobs', { kind: 'charge', key: 'b', runAt }); // rejected
  await post('/v1/jobs/batch', { jobs: [{ kind: 'http', key: 'c', runAt, payload: { uri: 'https://hooks.acme.com' } }] }); // rejected
  await post('/v1/schedules', { kind: 'ledger-transfer', key: 'd', cron: '0 9 * * *', timezone: 'UTC', payload: { from: 'a', to: 'b' } }); // rejected
  await post('/v1/jobs', { kind: 'charge', key: 'e', runAt, payload: { invoiceId: 'inv_1', amountCents: 1299 } });
}
`;

describe("openapi-typescript's output alone (no @almanac/client)", () => {
  it('types a create, a batch, a list, a reschedule and a schedule with real payloads of the built-in kinds', () => {
    expect(typeCheck({ [SAMPLE]: CORRECT })).toEqual([]);
  });

  it('rejects a wrong payload at compile time, on exactly the lines that have one', () => {
    const problems = typeCheck({ [SAMPLE]: WRONG });
    expect(problems.filter((p) => p.file !== SAMPLE)).toEqual([]);
    expect([...new Set(problems.map((p) => p.line))]).toEqual(markedLines(WRONG, '// rejected'));
    expect(problems.map((p) => p.message).join('\n')).toMatch(/amountCents/);
  });
});
