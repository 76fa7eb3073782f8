import { occurrenceKey, parseSchedule } from '@almanac/domain';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { type NewSchedule, SchedulesRepository } from './schedules.repository';

const hourly = parseSchedule('0 * * * *', 'UTC');

describe('SchedulesRepository (Postgres)', () => {
  let db: TestDatabase;
  let schedules: SchedulesRepository;

  beforeAll(async () => {
    db = await createTestDatabase(4);
    schedules = new SchedulesRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  const seed = (key: string): NewSchedule => ({
    tenantId: 1,
    key,
    kind: 'noop',
    cron: '0 * * * *',
    timezone: 'UTC',
    payload: null,
    maxAttempts: 3,
    missed: 'skip',
    timing: hourly,
    expectWithinSeconds: null,
  });

  it('creates once by key; the same key again returns the existing schedule', async () => {
    const a = await schedules.create(seed('daily'));
    const b = await schedules.create(seed('daily'));
    expect(a).toMatchObject({ created: true });
    expect(b).toEqual({ created: false, schedule: 'schedule' in a ? a.schedule : undefined });
  });

  it("refuses a new key at the tenant's quota, still answers a replay of an existing key, and counts per tenant", async () => {
    await db.dataSource.query(`DELETE FROM schedules`);
    expect(await schedules.create(seed('q-1'), 2)).toMatchObject({ created: true });
    expect(await schedules.create(seed('q-2'), 2)).toMatchObject({ created: true });
    expect(await schedules.create(seed('q-3'), 2)).toEqual({ quota: 2 });
    expect(await schedules.create(seed('q-1'), 2)).toMatchObject({ created: false });
    expect(await schedules.create({ ...seed('q-3'), tenantId: 2 }, 2)).toMatchObject({ created: true });
  });

  it('a create racing deletes of the same key never fails: it creates or finds the schedule', async () => {
    // The window is between a conflicting insert and the read of the row that conflicted.
    await schedules.create(seed('churn'));
    const failures: unknown[] = [];
    for (let i = 0; i < 100; i++) {
      const results = await Promise.allSettled([
        schedules.create(seed('churn')),
        db.dataSource.query(`DELETE FROM schedules WHERE tenant_id = 1 AND key = 'churn'`),
        schedules.create(seed('churn')),
      ]);
      for (const r of results) if (r.status === 'rejected') failures.push(r.reason);
    }
    expect(failures).toEqual([]);
  });

  it('watches a schedule from the moment it is given an expectation, and from its resume after a pause: earlier runs are not reported', async () => {
    const made = await schedules.create({ ...seed('watched'), tenantId: 9 });
    if (!('schedule' in made)) throw new Error('not created');
    const id = made.schedule.id;
    await db.dataSource.query(`UPDATE schedules SET created_at = now() - interval '400 days' WHERE id = $1`, [id]);
    const watched = async () => (await db.dataSource.query(`SELECT extract(epoch FROM now() - watched_through)::float8 AS ago FROM schedules WHERE id = $1`, [id]))[0].ago as number | null;
    expect(await watched()).toBeNull();
    await schedules.update(9, id, { expectWithinSeconds: 60 });
    expect(await watched()).toBeLessThan(5);
    await db.dataSource.query(`UPDATE schedules SET watched_through = now() - interval '1 day' WHERE id = $1`, [id]);
    await schedules.setPaused(9, id, true);
    expect(await watched()).toBeGreaterThan(80_000); // pausing keeps it
    await schedules.setPaused(9, id, false);
    expect(await watched()).toBeLessThan(5);
    // A new cron: its past instants never had rows either.
    await db.dataSource.query(`UPDATE schedules SET watched_through = now() - interval '1 day' WHERE id = $1`, [id]);
    await schedules.update(9, id, { cron: '30 * * * *', timing: { schedule: parseSchedule('30 * * * *', 'UTC'), from: { cron: '0 * * * *', timezone: 'UTC' } } });
    expect(await watched()).toBeLessThan(5);
  });

  it('changes nothing for fields sent as they are stored: the payload keeps its stored version, the watch its place', async () => {
    const payload = { account: 'acme', lines: [1, 2, 3] };
    const made = await schedules.create({ ...seed('synced'), tenantId: 9, payload, expectWithinSeconds: 60 });
    if (!('schedule' in made)) throw new Error('not created');
    const id = made.schedule.id;
    const [{ ref }] = await db.dataSource.query(`INSERT INTO schedule_payloads (tenant_id, schedule_id, payload) VALUES (9, $1, $2) RETURNING id::text AS ref`, [id, JSON.stringify(payload)]);
    await db.dataSource.query(`UPDATE schedules SET payload_ref = $2, watched_through = now() - interval '1 day' WHERE id = $1`, [id, ref]);
    const state = async () => (await db.dataSource.query(`SELECT payload_ref::text AS ref, extract(epoch FROM now() - watched_through)::float8 AS ago FROM schedules WHERE id = $1`, [id]))[0] as { ref: string | null; ago: number };
    // A sync sending the whole schedule again, its payload's keys in another order.
    await schedules.update(9, id, { kind: 'noop', payload: { lines: [1, 2, 3], account: 'acme' }, maxAttempts: 3, missed: 'skip', expectWithinSeconds: 60 });
    // Before: a new payload version (payload_ref cleared, the occurrences made again) and the watch moved to now.
    expect(await state()).toEqual({ ref, ago: expect.any(Number) });
    expect((await state()).ago).toBeGreaterThan(80_000);
    await schedules.update(9, id, { payload: { account: 'acme', lines: [1, 2] }, expectWithinSeconds: 120 });
    expect(await state()).toEqual({ ref: null, ago: expect.any(Number) });
    expect((await state()).ago).toBeLessThan(5);
  });

  it('an edit keeps a run moved by hand, and a pause cancels it: deleted, it came back at the instant it was moved from or, that instant past, never ran (review)', async () => {
    const made = await schedules.create({ ...seed('moved'), cron: '*/10 * * * *', timing: parseSchedule('*/10 * * * *', 'UTC') });
    if (!('schedule' in made)) throw new Error('not created');
    const id = made.schedule.id;
    const [{ now }] = await db.dataSource.query<{ now: Date }[]>(`SELECT now()`);
    const tenMinutes = (n: number) => new Date((Math.floor(now.getTime() / 600_000) + n) * 600_000);
    const occurrence = (nominal: Date, runAt: Date) =>
      db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, $1, 'noop', $2, 's')`, [occurrenceKey(id, nominal), runAt]);
    await occurrence(tenMinutes(3), tenMinutes(3)); // as the sweep made it
    await occurrence(tenMinutes(-3), tenMinutes(18)); // due half an hour ago, postponed by three hours
    const rows = () => db.dataSource.query<{ key: string; run_at: Date; state: string }[]>(`SELECT key, run_at, state FROM jobs WHERE key LIKE $1 ORDER BY key`, [`schedule:${id}:%`]);

    expect(await schedules.update(1, id, { payload: { v: 2 } })).toMatchObject({ removed: { count: 1 } });
    expect(await rows()).toEqual([{ key: occurrenceKey(id, tenMinutes(-3)), run_at: tenMinutes(18), state: 's' }]);

    expect(await schedules.setPaused(1, id, true)).toMatchObject({ removed: { count: 1 } });
    expect(await rows()).toEqual([{ key: occurrenceKey(id, tenMinutes(-3)), run_at: tenMinutes(18), state: 'c' }]);
  });

  it('a pause that waits for a run being moved by hand judges it as moved: chosen by its old version it was neither deleted nor cancelled, and ran while paused (review)', async () => {
    const made = await schedules.create({ ...seed('moving'), cron: '*/10 * * * *', timing: parseSchedule('*/10 * * * *', 'UTC') });
    if (!('schedule' in made)) throw new Error('not created');
    const id = made.schedule.id;
    const [{ now }] = await db.dataSource.query<{ now: Date }[]>(`SELECT now()`);
    const nominal = new Date((Math.floor(now.getTime() / 600_000) + 3) * 600_000);
    const [{ job }] = await db.dataSource.query<{ job: string }[]>(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, $1, 'noop', $2, 's') RETURNING id::text AS job`, [occurrenceKey(id, nominal), nominal],
    );
    const mover = db.dataSource.createQueryRunner(); // PATCH /v1/jobs/:id {runAt}, not committed yet
    await mover.connect();
    try {
      await mover.startTransaction();
      await mover.query(`UPDATE jobs SET run_at = run_at + interval '3 hours' WHERE id = $1`, [job]);
      const pausing = schedules.setPaused(1, id, true);
      await someoneWaitsOnALock(db.dataSource);
      await mover.commitTransaction();
      expect(await pausing).toMatchObject({ removed: { count: 1 } });
    } finally {
      if (mover.isTransactionActive) await mover.rollbackTransaction();
      await mover.release();
    }
    expect(await db.dataSource.query(`SELECT state FROM jobs WHERE id = $1`, [job])).toEqual([{ state: 'c' }]);
  });

  it('a timing change that waits for the schedule row keeps the occurrences that fell due during the wait', async () => {
    const made = await schedules.create({ ...seed('waits'), cron: '* * * * *' });
    if (!('schedule' in made)) throw new Error('not created');
    const id = made.schedule.id;
    const holder = db.dataSource.createQueryRunner(); // the recurring sweep's batch, inserting occurrences
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT 1 FROM schedules WHERE id = $1 FOR UPDATE`, [id]);
      const changing = schedules.update(1, id, { cron: '*/2 * * * *', timing: { schedule: parseSchedule('*/2 * * * *', 'UTC'), from: { cron: '* * * * *', timezone: 'UTC' } } });
      await someoneWaitsOnALock(db.dataSource);
      // An occurrence of the old timing that comes due while the change waits.
      const [{ at }] = await holder.query(`SELECT statement_timestamp() AS at`) as { at: Date }[];
      const key = occurrenceKey(id, new Date(Math.floor(at.getTime() / 1000) * 1000)); // keys name whole seconds
      await holder.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, $1, 'noop', $2, 's')`, [key, at]);
      await holder.commitTransaction();
      expect(await changing).toMatchObject({ removed: { count: 0 } }); // before: 1, removed as not due yet
      // Watched from the same now as its first run: from the wait's start, the new timing's instants
      // during the wait (no rows) were reported missed.
      const [{ watched }] = await db.dataSource.query<{ watched: Date }[]>(`SELECT watched_through AS watched FROM schedules WHERE id = $1`, [id]);
      expect(watched.getTime()).toBeGreaterThanOrEqual(at.getTime());
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });

  it('a resume that waits for the schedule row is watched from when it got the row, as its cursor is', async () => {
    const made = await schedules.create({ ...seed('resume-waits'), cron: '* * * * *' });
    if (!('schedule' in made)) throw new Error('not created');
    const id = made.schedule.id;
    await schedules.setPaused(1, id, true);
    const holder = db.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT 1 FROM schedules WHERE id = $1 FOR UPDATE`, [id]);
      const resuming = schedules.setPaused(1, id, false);
      await someoneWaitsOnALock(db.dataSource);
      const [{ at }] = await holder.query(`SELECT statement_timestamp() AS at`) as { at: Date }[];
      await holder.commitTransaction();
      await resuming;
      const [{ watched }] = await db.dataSource.query<{ watched: Date }[]>(`SELECT watched_through AS watched FROM schedules WHERE id = $1`, [id]);
      expect(watched.getTime()).toBeGreaterThanOrEqual(at.getTime()); // before: the transaction's start, before the wait
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });
});
