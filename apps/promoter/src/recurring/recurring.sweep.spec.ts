import { nextOccurrences, parseSchedule } from '@almanac/domain';
import { ExecutionRepository, JobQueriesRepository, PAYLOAD_BY_REFERENCE_BYTES, type RecurringRepository, RetentionRepository, SchedulesRepository } from '@almanac/persistence';
import { DAY, HOUR, iso, nextHour, NOW, openRecurringDb, recurringHelpers } from '@almanac/testing/recurring-rig';
import type { TestDatabase } from '@almanac/testing/test-db';
import type { SweepMetrics } from '../sweeps/sweep-metrics';

/** The recurring sweep materialising schedules' occurrences within the hot horizon: once each, with their payload, by their cron and timezone. */
describe('RecurringSweep (Postgres)', () => {
  let db: TestDatabase;
  let repo: RecurringRepository;
  let metrics: SweepMetrics;
  const { sweep, schedule, occurrences, nextRunAt, dbTime } = recurringHelpers(() => ({ db, repo, metrics }));

  beforeAll(async () => {
    ({ db, repo, metrics } = await openRecurringDb());
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, schedules'));
  afterAll(async () => db.drop());

  it('materialises every occurrence inside the hot horizon as a scheduled row and advances next_run_at', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), payload: { report: 'daily' } });
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ schedules: 1, inserted: 24, duplicates: 0, occurrences: { materialised: 24, missed: 0, skipped: 0 } });
    const rows = await occurrences(id);
    expect(rows[0]).toEqual({ key: `schedule:${id}:2026-11-29T11:00:00Z`, run_at: new Date('2026-11-29T11:00:00Z'), state: 's' });
    expect(rows.at(-1)?.run_at).toEqual(new Date('2026-11-30T10:00:00Z'));
    expect(await nextRunAt(id)).toEqual(new Date('2026-11-30T11:00:00Z'));
    const [job] = await db.dataSource.query(`SELECT payload, max_attempts, kind, tenant_id FROM jobs WHERE key = $1`, [rows[0].key]);
    expect(job).toEqual({ payload: { report: 'daily' }, max_attempts: 5, kind: 'noop', tenant_id: 1 });
  });

  it('stores a large payload once per version; its occurrences point at it and read it through the claim and the view', async () => {
    const big = { report: 'monthly', blob: 'x'.repeat(PAYLOAD_BY_REFERENCE_BYTES) };
    const start = await dbTime(); // edited below, by the database's clock
    const id = await schedule({ nextRunAt: nextHour(start), payload: big });
    const small = await schedule({ nextRunAt: nextHour(start), payload: { report: 'daily' } });
    const rowsOf = (sid: string) =>
      db.dataSource.query<{ id: string; payload: unknown; ref: string | null }[]>(
        `SELECT id::text AS id, payload, payload_ref::text AS ref FROM jobs WHERE key LIKE $1 ORDER BY run_at`, [`schedule:${sid}:%`],
      );
    const versions = async () => (await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM schedule_payloads`))[0].n;
    try {
      await sweep().runOnce(start);
      const rows = await rowsOf(id);
      expect(rows).toHaveLength(24);
      expect(rows.filter((r) => r.payload === null && r.ref !== null)).toHaveLength(24);
      expect(new Set(rows.map((r) => r.ref)).size).toBe(1);
      expect(await versions()).toBe(1);
      expect((await rowsOf(small)).every((r) => r.ref === null && (r.payload as { report: string }).report === 'daily')).toBe(true);
      // Read back whole: by the worker's claim and by the API's view.
      expect((await new JobQueriesRepository(db.dataSource).findForTenant(1, rows[1].id))?.payload).toEqual(big);
      await db.dataSource.query(`UPDATE jobs SET state = 'q', run_at = now() - interval '1 second' WHERE id = $1`, [rows[0].id]);
      const claim = await new ExecutionRepository(db.dataSource).claim([rows[0].id], new Date(), new Date(Date.now() + 30_000), 7);
      expect(claim.claimed.map((c) => c.payload)).toEqual([big]);
      // A new payload is a new version: the rows not started are made again with it; the running one keeps its own.
      const changed = { ...big, report: 'quarterly' };
      await new SchedulesRepository(db.dataSource).update(1, id, { payload: changed });
      expect(await sweep().runOnce(await dbTime())).toMatchObject({ inserted: 23 }); // made again
      const after = await rowsOf(id);
      const made = after.filter((r) => r.id !== rows[0].id);
      expect(after.filter((r) => r.ref === rows[0].ref)).toHaveLength(1);
      expect(made).toHaveLength(23);
      expect(new Set(made.map((r) => r.ref)).size).toBe(1);
      expect(made[0].ref).not.toBe(rows[0].ref);
      expect((await new JobQueriesRepository(db.dataSource).findForTenant(1, made[0].id))?.payload).toEqual(changed);
      expect(await versions()).toBe(2);
      // Retention removes a version once nothing points at it: the old one when its last row goes.
      const retention = new RetentionRepository(db.dataSource);
      expect(await retention.removeUnusedSchedulePayloads(1, 100)).toBe(0);
      await db.dataSource.query(`DELETE FROM jobs WHERE payload_ref = $1`, [rows[0].ref]);
      expect(await retention.removeUnusedSchedulePayloads(1, 100)).toBe(1);
      expect(await versions()).toBe(1);
      expect((await new JobQueriesRepository(db.dataSource).findForTenant(1, made[0].id))?.payload).toEqual(changed);
    } finally {
      await db.dataSource.query('TRUNCATE schedule_payloads');
    }
  });

  it('is a no-op the second time, and re-materialising the same occurrences inserts nothing', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z') });
    await sweep().runOnce(NOW);
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0, inserted: 0 });
    // A crashed run that never advanced the cursor: same keys again.
    await db.dataSource.query(`UPDATE schedules SET next_run_at = '2026-11-29T11:00:00Z' WHERE id = $1`, [id]);
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 1, inserted: 0, duplicates: 24 });
    expect(await occurrences(id)).toHaveLength(24);
  });

  it('next hour: materialises only the one new occurrence', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z') });
    await sweep().runOnce(NOW);
    const res = await sweep().runOnce(new Date(NOW.getTime() + HOUR));
    expect(res).toMatchObject({ schedules: 1, inserted: 1 });
    expect((await occurrences(id)).at(-1)?.run_at).toEqual(new Date('2026-11-30T11:00:00Z'));
  });

  describe('daylight saving (one rule: a missing local time is skipped, a repeated one runs once, at its first instant)', () => {
    it.each([
      // [zone, spring-forward day, UTC instants of 02:30 local around it]
      ['Europe/Berlin', '2026-03-28T00:00:00Z', ['2026-03-28T01:30:00.000Z', '2026-03-30T00:30:00.000Z']],
      ['America/New_York', '2026-03-07T00:00:00Z', ['2026-03-07T07:30:00.000Z', '2026-03-09T06:30:00.000Z']],
    ])('%s spring forward: 02:30 does not exist that night and is skipped', async (timezone, from, expected) => {
      const id = await schedule({ cron: '30 2 * * *', timezone, nextRunAt: new Date(from) });
      await sweep().runOnce(new Date(new Date(from).getTime() + 60e3));
      await sweep().runOnce(new Date(new Date(from).getTime() + 2 * DAY));
      expect(iso(await occurrences(id)).slice(0, 2)).toEqual(expected);
    });

    it.each([
      ['Europe/Berlin', '2026-10-24T12:00:00Z', ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']],
      ['America/New_York', '2026-10-31T12:00:00Z', ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']],
    ])('%s fall back: 01:30/02:30 happens twice locally but runs once (first instant)', async (timezone, from, expected) => {
      const cron = timezone === 'Europe/Berlin' ? '30 2 * * *' : '30 1 * * *';
      const id = await schedule({ cron, timezone, nextRunAt: new Date(from) });
      await sweep().runOnce(new Date(from));
      await sweep().runOnce(new Date(new Date(from).getTime() + DAY));
      expect(iso(await occurrences(id)).slice(0, 2)).toEqual(expected);
    });
  });

  it('a cron change (API) removes unrun occurrences; the next run materialises the new timing only', async () => {
    const start = await dbTime(); // changed below, by the database's clock
    const id = await schedule({ nextRunAt: nextHour(start) });
    await sweep().runOnce(start);
    const schedules = new SchedulesRepository(db.dataSource);
    const daily = { cron: '30 9 * * *', timing: { schedule: parseSchedule('30 9 * * *', 'UTC') } };
    // Computed from a stale read (someone else changed the cron meanwhile): refused, nothing removed.
    const stale = { cron: '15 * * * *', timezone: 'UTC' };
    expect(await schedules.update(1, id, { cron: daily.cron, timing: { ...daily.timing, from: stale } })).toBe('changed');
    expect(await occurrences(id)).toHaveLength(24);
    const from = { cron: '0 * * * *', timezone: 'UTC' };
    await schedules.update(1, id, { cron: daily.cron, timing: { ...daily.timing, from } });
    expect(await occurrences(id)).toHaveLength(0);
    await sweep().runOnce(await dbTime());
    expect(iso(await occurrences(id))).toEqual([nextOccurrences(daily.timing.schedule, start, 1)[0].toISOString()]);
  });
});
