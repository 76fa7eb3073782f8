import { type AlmanacClient, ConflictError, createAdminClient, createClient, NotFoundError, ValidationError } from '@almanac/client';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

/** @almanac/client against the real api role: schedules, end to end. */
describe('@almanac/client: schedules', () => {
  let h: ApiHarness;
  let client: AlmanacClient;

  beforeAll(async () => {
    h = await startApi();
    const admin = createAdminClient({ baseUrl: h.url, adminToken: ADMIN_TOKEN });
    client = createClient({ baseUrl: h.url, apiKey: (await admin.tenants.create({ name: 'acme' })).apiKey });
  });
  afterAll(() => h.close());

  const report = { kind: 'http', key: 'weekday-report', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', payload: { url: 'https://reports.acme.com/run' } } as const;

  it('creates idempotently by key, previews the next runs in its zone, changes, pauses, resumes and deletes', async () => {
    const { created, schedule } = await client.schedules.create(report);
    expect(created).toBe(true);
    expect(schedule).toMatchObject({ key: report.key, missed: 'skip', paused: false, version: 1, payload: report.payload });
    expect(await client.schedules.create(report)).toEqual({ created: false, schedule });
    await expect(client.schedules.create({ ...report, cron: '0 10 * * *' })).rejects.toBeInstanceOf(ConflictError);

    const next = await client.schedules.nextRuns(schedule.id, 3);
    expect(next.timezone).toBe('Europe/Berlin');
    expect(next.items.map((o) => o.local)).toEqual([expect.stringMatching(/T09:00:00\+0[12]:00$/), expect.any(String), expect.any(String)]);

    // Its runs of a window: none has come due since it was made, so every one is upcoming.
    const runs = await client.schedules.runs(schedule.id, { from: new Date(), to: new Date(Date.now() + 7 * 86_400_000), limit: 2 });
    expect(runs.items.map((r) => r.state)).toEqual(['upcoming', 'upcoming']);
    expect(runs.nextCursor).not.toBeNull();
    const all: string[] = [];
    for await (const r of client.schedules.eachRun(schedule.id, { from: new Date(), to: new Date(Date.now() + 7 * 86_400_000), limit: 2 })) all.push(r.local);
    expect(all).toHaveLength(5); // the weekdays of the next seven days
    expect(all.every((local) => /T09:00:00\+0[12]:00$/.test(local))).toBe(true);

    const changed = await client.schedules.update(schedule.id, { cron: '30 8 * * 1-5', missed: 'latest' });
    expect(changed).toMatchObject({ version: 2, cron: '30 8 * * 1-5', missed: 'latest', removedOccurrences: 0 });
    const refused = await client.schedules.update(schedule.id, { kind: 'charge', payload: { invoiceId: 'inv_1', amountCents: 0 } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).fields).toEqual(['payload.amountCents']);

    expect(await client.schedules.pause(schedule.id)).toMatchObject({ paused: true, nextRunAt: changed.nextRunAt });
    expect(await client.schedules.resume(schedule.id)).toMatchObject({ paused: false });
    expect(await client.schedules.get(schedule.id)).toMatchObject({ id: schedule.id, version: 2 });
    expect(await client.schedules.delete(schedule.id)).toMatchObject({ id: schedule.id });
    await expect(client.schedules.get(schedule.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('iterates schedules by key across pages', async () => {
    for (const key of ['b-2', 'a-1', 'c-3']) await client.schedules.create({ ...report, key });
    const keys: string[] = [];
    for await (const s of client.schedules.iterate({ limit: 2 })) keys.push(s.key);
    expect(keys).toEqual(['a-1', 'b-2', 'c-3']);
  });
});
