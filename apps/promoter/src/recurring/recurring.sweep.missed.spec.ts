import { DEFAULT_MAX_STEPS } from '@almanac/domain';
import type { RecurringRepository } from '@almanac/persistence';
import { DAY, iso, NOW, openRecurringDb, recurringHelpers } from '@almanac/testing/recurring-rig';
import type { TestDatabase } from '@almanac/testing/test-db';
import type { SweepMetrics } from '../sweeps/sweep-metrics';
import { SchedulePlanner } from './schedule-planner';

/** The recurring sweep's occurrences that passed unrun (downtime, a pause): on time within the tolerance, else as the missed policy says, caught up in bounded slices. */
describe('RecurringSweep (Postgres)', () => {
  let db: TestDatabase;
  let repo: RecurringRepository;
  let metrics: SweepMetrics;
  const { sweep, schedule, occurrences } = recurringHelpers(() => ({ db, repo, metrics }));

  beforeAll(async () => {
    ({ db, repo, metrics } = await openRecurringDb());
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, schedules'));
  afterAll(async () => db.drop());

  it('an occurrence a little late (within the tolerance) is on time, not missed', async () => {
    const id = await schedule({ cron: '* * * * *', nextRunAt: new Date('2026-11-29T10:19:00Z') });
    const res = await sweep().runOnce(new Date('2026-11-29T10:19:40Z'));
    expect(res.occurrences).toMatchObject({ missed: 0, skipped: 0 });
    expect((await occurrences(id))[0].run_at).toEqual(new Date('2026-11-29T10:19:00Z'));
  });

  describe('missed occurrences after downtime (hourly, down since 05:00, now 10:20)', () => {
    // Missed: 05:00 … 10:00 (10:00 is 20 min late, beyond the 5 min tolerance) = 6.
    const down = new Date('2026-11-29T05:00:00Z');

    it('skip: none of them run; continues from now', async () => {
      const id = await schedule({ nextRunAt: down, missed: 'skip' });
      const res = await sweep().runOnce(NOW);
      expect(res.occurrences).toEqual({ materialised: 24, missed: 0, skipped: 6 });
      expect(iso(await occurrences(id))[0]).toBe('2026-11-29T11:00:00.000Z');
    });

    it('latest: only the most recent one runs (due at once)', async () => {
      const id = await schedule({ nextRunAt: down, missed: 'latest' });
      const res = await sweep().runOnce(NOW);
      expect(res.occurrences).toEqual({ materialised: 24, missed: 1, skipped: 5 });
      expect(iso(await occurrences(id)).slice(0, 2)).toEqual(['2026-11-29T10:00:00.000Z', '2026-11-29T11:00:00.000Z']);
    });

    it('all: every one runs, up to the cap (the most recent ones; the overflow counts as skipped)', async () => {
      const a = await schedule({ nextRunAt: down, missed: 'all' });
      const res = await sweep().runOnce(NOW);
      expect(res.occurrences).toEqual({ materialised: 24, missed: 6, skipped: 0 });
      expect(await occurrences(a)).toHaveLength(30);
      await db.dataSource.query('TRUNCATE jobs, schedules');
      const b = await schedule({ nextRunAt: down, missed: 'all' });
      const capped = await sweep({ missedCap: 4 }).runOnce(NOW);
      expect(capped.occurrences).toEqual({ materialised: 24, missed: 4, skipped: 2 });
      expect(iso(await occurrences(b))[0]).toBe('2026-11-29T07:00:00.000Z');
    });

    it('counts almanac_schedule_occurrences_total by outcome', async () => {
      const value = async (outcome: string) =>
        (await metrics.occurrences.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
      const before = [await value('materialised'), await value('missed'), await value('skipped')];
      await schedule({ nextRunAt: down, missed: 'latest' });
      await sweep().runOnce(NOW);
      expect([await value('materialised'), await value('missed'), await value('skipped')]).toEqual([
        before[0] + 24,
        before[1] + 1,
        before[2] + 5,
      ]);
    });
  });

  it('paused schedules are left alone; resuming applies the missed policy to what passed meanwhile', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), paused: true, missed: 'latest' });
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0 });
    await db.dataSource.query(`UPDATE schedules SET paused = false WHERE id = $1`, [id]);
    const later = new Date('2026-11-29T15:20:00Z');
    const res = await sweep().runOnce(later);
    expect(res.occurrences).toEqual({ materialised: 24, missed: 1, skipped: 4 });
    expect(iso(await occurrences(id))[0]).toBe('2026-11-29T15:00:00.000Z');
  });

  it('catches up a per-minute schedule resumed after 60 days in slices of bounded planning, one batch each', async () => {
    // 86,395 missed minutes: stepped through at once, ~0.4 s of the promoter's event loop for one schedule.
    const id = await schedule({ cron: '* * * * *', nextRunAt: new Date(NOW.getTime() - 60 * DAY), missed: 'latest' });
    const plans = jest.spyOn(SchedulePlanner.prototype, 'plan');
    try {
      const res = await sweep().runOnce(NOW);
      const steps = plans.mock.results.map((r) => (r.value as { steps: number }).steps);
      expect(steps.length).toBeGreaterThan(4); // each slice its own batch: the event loop turns between them
      expect(Math.max(...steps)).toBeLessThanOrEqual(DEFAULT_MAX_STEPS + 1); // + the latest one, stepped again next slice
      expect(res.occurrences).toMatchObject({ missed: 1, skipped: 60 * 24 * 60 - 6 }); // the last 5 minutes are within the tolerance
      expect(iso(await occurrences(id))[0]).toBe('2026-11-29T10:14:00.000Z'); // the latest missed one, then on time from 10:15
    } finally {
      plans.mockRestore();
    }
  });
});
