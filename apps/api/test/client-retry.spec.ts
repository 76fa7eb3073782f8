import { createAdminClient, createClient, RateLimitedError, RequestTimeoutError, UnavailableError } from '@almanac/client';
import { Clock } from '@almanac/platform';
import type { Server } from 'node:http';
import { Client } from 'pg';
import { ADMIN_TOKEN, type ApiHarness, DAY, inMs, startApi } from './api-harness';

/**
 * The API's clock, moved on by the client's retry delay instead of real time passing: a rate
 * limiter refills exactly as if the client had slept for the Retry-After it was given.
 */
function steppedClock(h: ApiHarness) {
  let offsetMs = 0;
  const clock = h.app.get<Clock>(Clock);
  const spy = jest.spyOn(clock, 'now').mockImplementation(() => new Date(Date.now() + offsetMs));
  const asked: number[] = [];
  return {
    asked,
    delay: async (ms: number) => {
      asked.push(ms);
      offsetMs += ms;
    },
    restore: () => spy.mockRestore(),
  };
}

describe('@almanac/client: retries after 429, honouring Retry-After', () => {
  let h: ApiHarness;
  let stepped: ReturnType<typeof steppedClock>;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '1' }); // a burst of one read
  });
  beforeEach(() => (stepped = steppedClock(h)));
  afterEach(() => stepped.restore());
  afterAll(() => h.close());

  const tenant = async (name: string, rateLimitPerSecond?: number) =>
    (await createAdminClient({ baseUrl: h.url, adminToken: ADMIN_TOKEN }).tenants.create({ name, rateLimitPerSecond })).apiKey;

  it('a read over the tenant\'s rate waits what Retry-After asked (1 s), then succeeds', async () => {
    const client = createClient({ baseUrl: h.url, apiKey: await tenant('reader'), delay: stepped.delay });
    await client.jobs.list({ limit: 1 });
    const page = await client.jobs.list({ limit: 1 }); // refused once, then answered
    expect(page.items).toEqual([]);
    expect(stepped.asked).toEqual([1000]);
  });

  it('a create over the ingest rate is retried with the same key and makes one job', async () => {
    const client = createClient({ baseUrl: h.url, apiKey: await tenant('writer', 1), delay: stepped.delay });
    const runAt = inMs(2 * DAY);
    const burst = await client.jobs.batch(Array.from({ length: 1000 }, (_, i) => ({ kind: 'noop' as const, key: `burst-${i}`, runAt }))); // the whole bucket
    expect(burst.created).toBe(1000);
    const { created, job } = await client.jobs.create({ kind: 'noop', key: 'after-the-burst', runAt });
    expect(created).toBe(true);
    expect(stepped.asked).toEqual([1000]);
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key = 'after-the-burst'`);
    expect(n).toBe(1);
    expect(job.key).toBe('after-the-burst');
  });

  it('gives up after its attempts, or when Retry-After is longer than it may wait, with the wait in the error', async () => {
    const apiKey = await tenant('impatient');
    const once = createClient({ baseUrl: h.url, apiKey, delay: stepped.delay, retry: { attempts: 1 } });
    await once.jobs.list();
    const refused = await once.jobs.list().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(refused).toMatchObject({ status: 429, retryAfterMs: 1000, details: [{ field: 'tenant', rule: 'request_rate_limit' }] });
    const brief = createClient({ baseUrl: h.url, apiKey, delay: stepped.delay, retry: { maxDelayMs: 500 } });
    await expect(brief.jobs.list()).rejects.toBeInstanceOf(RateLimitedError);
    expect(stepped.asked).toEqual([]);
  });
});

/** A database another session stalls for real: the API answers 503 at its deadline. */
describe('@almanac/client: 503, timeouts and the caller\'s signal', () => {
  let h: ApiHarness;
  let locker: Client;
  let apiKey: string;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_REQUEST_TIMEOUT_MS: '300' });
    apiKey = (await h.createTenant()).apiKey;
    locker = new Client({ connectionString: h.db.url });
    await locker.connect();
  });
  afterAll(async () => {
    await locker.end();
    // After an aborted request fetch (undici) opens a spare connection that sends nothing: not
    // idle to the server, whose shutdown then waited over a minute for it.
    (h.app.getHttpServer() as Server).closeAllConnections();
    await h.close();
  });

  const lock = async (table: string) => {
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  };
  const unlock = () => locker.query('ROLLBACK');

  it('retries a create after 503 (its key makes the replay safe): the wait ends the stall, one job results', async () => {
    const asked: number[] = [];
    const delay = async (ms: number) => {
      asked.push(ms);
      await unlock();
    };
    const client = createClient({ baseUrl: h.url, apiKey, delay });
    await client.jobs.list(); // the key is known before the stall
    await lock('jobs');
    const { job } = await client.jobs.create({ kind: 'noop', key: 'through-the-stall', runAt: inMs(DAY) });
    expect(asked).toEqual([1000]);
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key = $1`, [job.key]);
    expect(n).toBe(1);
  });

  it('does not retry after 503 what could happen twice (a new tenant)', async () => {
    const delay = jest.fn(async () => undefined);
    const admin = createAdminClient({ baseUrl: h.url, adminToken: ADMIN_TOKEN, delay });
    await lock('tenants');
    try {
      const refused = await admin.tenants.create({ name: 'maybe-twice' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(UnavailableError);
      expect(refused).toMatchObject({ status: 503, retryAfterMs: 1000 });
    } finally {
      await unlock();
    }
    expect(delay).not.toHaveBeenCalled();
  });

  it('abandons a request after its timeout, and at once when the caller aborts', async () => {
    const client = createClient({ baseUrl: h.url, apiKey, timeoutMs: 100 });
    await lock('jobs');
    try {
      const late = await client.jobs.create({ kind: 'noop', key: 'too-slow', runAt: inMs(DAY) }).catch((e: unknown) => e);
      expect(late).toBeInstanceOf(RequestTimeoutError);
      expect(late).toMatchObject({ method: 'POST', path: '/v1/jobs', timeoutMs: 100 });
    } finally {
      await unlock();
    }
    const aborted = await client.jobs.list({}, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect((aborted as Error).name).toBe('AbortError');
  });
});
