import {
  type AlmanacClient,
  type BuiltInKindPayloads,
  ConflictError,
  createAdminClient,
  createClient,
  type CreateJobRequest,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from '@almanac/client';
import { ADMIN_TOKEN, type ApiHarness, DAY, inMs, startApi } from './api-harness';

/** @almanac/client against the real api role: jobs, errors, bulk operations, kinds. */
describe('@almanac/client: jobs', () => {
  let h: ApiHarness;
  let client: AlmanacClient;
  let other: AlmanacClient;
  const requested: string[] = [];

  beforeAll(async () => {
    h = await startApi();
    const admin = createAdminClient({ baseUrl: h.url, adminToken: ADMIN_TOKEN });
    // The real fetch, each URL noted: how many pages an iteration asked for.
    const fetch: typeof globalThis.fetch = (input, init) => {
      requested.push(input instanceof Request ? input.url : input.toString());
      return globalThis.fetch(input, init);
    };
    client = createClient({ baseUrl: h.url, apiKey: (await admin.tenants.create({ name: 'acme' })).apiKey, fetch });
    other = createClient({ baseUrl: h.url, apiKey: (await admin.tenants.create({ name: 'other' })).apiKey });
  });
  afterAll(() => h.close());

  it('creates a job; the same request again answers the same job (created: false); it is found by key and by id', async () => {
    const request: CreateJobRequest<BuiltInKindPayloads> = {
      kind: 'charge',
      key: 'invoice:2026-11:customer-42',
      runAt: inMs(2 * DAY),
      payload: { invoiceId: 'inv_2026_11_42', amountCents: 1299 },
    };
    const first = await client.jobs.create(request);
    expect(first).toMatchObject({ created: true, job: { kind: 'charge', key: request.key, tier: 'cold', state: 'scheduled', attempts: 0 } });
    const replay = await client.jobs.create(request);
    expect(replay).toEqual({ created: false, job: first.job });
    const byKey = await client.jobs.findByKey(request.key);
    expect(byKey).toMatchObject({ id: first.job.id, payload: request.payload, result: null, history: [] });
    expect(await client.jobs.get(first.job.id)).toEqual(byKey);
  });

  it("a key whose job retention removed: a ConflictError, or with replay: 'result' what the key keeps", async () => {
    const request: CreateJobRequest<BuiltInKindPayloads> = { kind: 'noop', key: 'removed:1', runAt: inMs(DAY) };
    const [{ id: tenantId }] = await h.db.dataSource.query<{ id: number }[]>(`SELECT id FROM tenants WHERE name = 'acme'`);
    await h.db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through) VALUES ($1, 'removed:1', '2026-11-02', 'x', NULL)`, [tenantId]);
    await expect(client.jobs.create(request)).rejects.toBeInstanceOf(ConflictError);
    const replayed = await client.jobs.create({ ...request, replay: 'result' });
    expect(replayed).toEqual({ created: false, removed: { removed: true, key: 'removed:1', state: 'dead', removedOn: '2026-11-02', reservedThrough: null, resultDigest: null } });
  });

  it('creates a batch, one result per job in order; a replay finds them existing', async () => {
    const runAt = new Date(Date.now() + 3 * DAY);
    const jobs: CreateJobRequest<BuiltInKindPayloads>[] = [
      { kind: 'http', key: 'hook:1', runAt, payload: { url: 'https://hooks.acme.com/invoice', body: { invoice: 1 } } },
      { kind: 'ledger-transfer', key: 'move:1', runAt, payload: { from: 'acct-a', to: 'acct-b', amountCents: 2500 } },
      { kind: 'charge', key: 'inv:0', runAt, payload: { invoiceId: 'inv_0', amountCents: 0 } }, // the API's schema wants >= 1
    ];
    const res = await client.jobs.batch(jobs);
    expect(res).toMatchObject({ created: 2, existing: 0, errors: 1 });
    expect(res.results.map((r) => r.status)).toEqual(['created', 'created', 'error']);
    expect(res.results[0].job).toMatchObject({ kind: 'http', key: 'hook:1', runAt: runAt.toISOString() });
    expect(res.results[2].error).toMatchObject({ statusCode: 400, details: [expect.objectContaining({ field: 'payload.amountCents' })] });
    const again = await client.jobs.batch(jobs.slice(0, 2));
    expect(again).toMatchObject({ created: 0, existing: 2, errors: 0 });
  });

  it('iterates a filtered list across pages, following nextCursor, every job once; breaking off stops fetching', async () => {
    const runAt = inMs(5 * DAY);
    await client.jobs.batch(Array.from({ length: 7 }, (_, i) => ({ kind: 'noop' as const, key: `page:${i}`, runAt, payload: { n: i } })));
    requested.length = 0;
    const keys: string[] = [];
    for await (const job of client.jobs.iterate({ kind: 'noop', limit: 3 })) keys.push(job.key);
    expect(keys.filter((k) => k.startsWith('page:')).sort()).toEqual(['page:0', 'page:1', 'page:2', 'page:3', 'page:4', 'page:5', 'page:6']);
    expect(new Set(keys).size).toBe(keys.length);
    expect(requested).toHaveLength(3); // 7 noop jobs, 3 a page
    expect(requested.slice(1).every((url) => new URL(url).searchParams.has('cursor'))).toBe(true);

    requested.length = 0;
    for await (const job of client.jobs.iterate({ kind: 'noop', limit: 3 })) if (job) break;
    expect(requested).toHaveLength(1);
  });

  it('throws typed errors carrying status, message and details', async () => {
    const { job } = await client.jobs.create({ kind: 'noop', key: 'mine', runAt: inMs(DAY) });

    const elsewhere = await other.jobs.get(job.id).catch((e: unknown) => e);
    expect(elsewhere).toBeInstanceOf(NotFoundError);
    expect(elsewhere).toMatchObject({ status: 404, message: `job ${job.id} not found`, details: [] });

    const reused = await client.jobs.create({ kind: 'noop', key: 'mine', runAt: inMs(2 * DAY) }).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(ConflictError);
    expect(reused).toMatchObject({ status: 409, details: [{ field: 'key', rule: 'conflict' }], message: expect.stringContaining('runAt') });

    const noZone = await client.jobs.create({ kind: 'noop', key: 'no-zone', runAt: '2026-11-30T09:00:00' }).catch((e: unknown) => e);
    expect(noZone).toBeInstanceOf(ValidationError);
    expect(noZone).toMatchObject({ status: 400, error: 'Bad Request', details: [{ field: 'runAt', rule: 'missing_zone' }] });

    const badPayload = await client.jobs.create({ kind: 'charge', key: 'bad', runAt: inMs(DAY), payload: { invoiceId: '', amountCents: 1 } }).catch((e: unknown) => e);
    expect(badPayload).toBeInstanceOf(ValidationError);
    expect((badPayload as ValidationError).fields).toEqual(['payload.invoiceId']);

    const stranger = createClient({ baseUrl: h.url, apiKey: 'alm_not-a-key' });
    await expect(stranger.jobs.list()).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('answers 403 past a quota as a ForbiddenError naming the rule', async () => {
    const admin = createAdminClient({ baseUrl: h.url, adminToken: ADMIN_TOKEN });
    const small = createClient({ baseUrl: h.url, apiKey: (await admin.tenants.create({ name: 'small', maxSchedules: 1 })).apiKey });
    const schedule = { kind: 'noop', cron: '0 9 * * *', timezone: 'UTC' } as const;
    await small.schedules.create({ ...schedule, key: 'only-one' });
    const refused = await small.schedules.create({ ...schedule, key: 'one-too-many' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ForbiddenError);
    expect(refused).toMatchObject({ status: 403, details: [{ field: 'schedules', rule: 'quota' }] });
  });

  it('starts bulk operations and follows them; lists the registered kinds', async () => {
    const cancel = await client.jobs.bulkCancel({ filter: { keyPrefix: 'page:' } });
    expect(cancel).toMatchObject({ action: 'cancel', state: 'pending', filter: { keyPrefix: 'page:' }, matched: null });
    expect(await client.operations.get(cancel.id)).toMatchObject({ id: cancel.id, state: 'pending' });
    const move = await client.jobs.bulkReschedule({ filter: { kind: 'http' }, shiftBySeconds: 3600 });
    expect(move).toMatchObject({ action: 'reschedule', shiftBySeconds: 3600 });
    await expect(other.operations.get(move.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.operations.cancel(move.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await client.operations.cancel(move.id)).toMatchObject({ id: move.id, state: 'cancelled' });

    const kinds = await client.kinds.list();
    expect(kinds.map((k) => k.kind)).toEqual(expect.arrayContaining(['charge', 'http', 'ledger-transfer', 'noop']));
    expect(kinds.find((k) => k.kind === 'charge')?.payloadSchema).toMatchObject({ required: ['invoiceId', 'amountCents'] });
  });
});
