import { type MissedPolicy, occurrenceKey, parseSchedule } from '@almanac/domain';
import { RecurringRepository, SchedulesRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { RecurringSweep } from './recurring.sweep';
import { SchedulePlanner } from './schedule-planner';

const MINUTE = 60e3;
const HOUR = 60 * MINUTE;
/** The ISO time `n` minutes after `from`. */
const minutesFrom = (from: Date) => (n: number) => new Date(from.getTime() + n * MINUTE).toISOString();
const everyMinute = parseSchedule('* * * * *', 'UTC');

/** What pause, resume and edits do to a schedule's materialised occurrences, through the recurring sweep. */
describe('schedule changes and their occurrences (Postgres)', () => {
  let db: TestDatabase;
  let schedules: SchedulesRepository;
  let sweep: RecurringSweep;

  beforeAll(async () => {
    db = await createTestDatabase();
    schedules = new SchedulesRepository(db.dataSource);
    sweep = new RecurringSweep(
      new RecurringRepository(db.dataSource),
      new SchedulePlanner({ missedCap: 100, lateToleranceMs: 5 * MINUTE }),
      { horizonMs: HOUR, batchSize: 100, maxPerRun: 1000, concurrency: 1, maxBatchRows: 20_000, maxBatchBytes: 16 << 20, maxPerTenantPerRun: 1e6, nearMs: 10 * MINUTE },
    );
  });
  afterAll(() => db.drop());
  beforeEach(() => db.dataSource.query('TRUNCATE schedules, jobs'));

  async function perMinute(missed: MissedPolicy, from: Date): Promise<string> {
    const created = await schedules.create({
      tenantId: 1, key: `every-minute-${missed}`, kind: 'noop', cron: '* * * * *', timezone: 'UTC', payload: { v: 1 }, maxAttempts: 3, missed, timing: everyMinute, expectWithinSeconds: null,
    });
    if (!('schedule' in created)) throw new Error('not created');
    // Made as if long ago: its cursor starts at `from`.
    await db.dataSource.query(`UPDATE schedules SET next_run_at = $2 WHERE id = $1`, [created.schedule.id, from]);
    return created.schedule.id;
  }

  async function occurrences(id: string): Promise<{ at: string; state: string; attempts: number; payload: unknown; kind: string; max_attempts: number }[]> {
    const rows: { run_at: Date; state: string; attempts: number; payload: unknown; kind: string; max_attempts: number }[] = await db.dataSource.query(
      `SELECT run_at, state, attempts, payload, kind, max_attempts FROM jobs WHERE key LIKE $1 ORDER BY run_at`, [`schedule:${id}:%`],
    );
    return rows.map(({ run_at, ...r }) => ({ at: run_at.toISOString(), ...r }));
  }

  const dbNow = async () => (await db.dataSource.query<{ now: Date }[]>(`SELECT now()`))[0].now;

  /**
   * A resume goes by the database's clock: the minute `minutes` before the database's current
   * one, once its clock is 1-58 s into a minute (so a resume now lands within that minute).
   */
  async function minutesAgo(minutes: number): Promise<Date> {
    for (const bound = Date.now() + 5_000; ; ) {
      const t = (await dbNow()).getTime();
      if ((t % MINUTE > 1_000 && t % MINUTE < 58_000) || Date.now() > bound) return new Date(t - (t % MINUTE) - minutes * MINUTE);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('pause removes the occurrences not started yet (those started go on), and makes none while paused', async () => {
    const from = await minutesAgo(40); // resumed 40 minutes in (and a few seconds), by the database's clock
    const m = minutesFrom(from);
    const id = await perMinute('skip', from);
    await sweep.runOnce(from);
    expect(await occurrences(id)).toHaveLength(61); // 60 minutes on
    // The first is running; the second failed its first attempt and waits for its retry.
    await db.dataSource.query(`UPDATE jobs SET state = 'r', attempts = 1 WHERE key = $1`, [occurrenceKey(id, new Date(m(0)))]);
    await db.dataSource.query(`UPDATE jobs SET state = 'q', attempts = 1 WHERE key = $1`, [occurrenceKey(id, new Date(m(1)))]);
    const paused = await schedules.setPaused(1, id, true);
    expect(paused).toMatchObject({ removed: { count: 59 }, schedule: { paused: true, nextRunAt: new Date(m(2)) } });
    expect((await occurrences(id)).map((o) => [o.at, o.state])).toEqual([[m(0), 'r'], [m(1), 'q']]);
    expect(await sweep.runOnce(new Date(from.getTime() + 30 * MINUTE))).toMatchObject({ inserted: 0 });
    // Paused twice: nothing more to remove, the cursor stays.
    expect(await schedules.setPaused(1, id, true)).toMatchObject({ removed: { count: 0 }, schedule: { nextRunAt: new Date(m(2)) } });
    // Resumed (skip): made again from the first minute after the resume on.
    await schedules.setPaused(1, id, false);
    await sweep.runOnce(await dbNow());
    const after = (await occurrences(id)).map((o) => o.at);
    expect(after.slice(2)[0]).toBe(m(41));
    expect(after[after.length - 1]).toBe(m(100));
  });

  it.each([
    ['skip', []],
    ['latest', [130]],
  ] as const)('resumed after a pause longer than the horizon, missed: %s runs what the policy says of the runs due meanwhile', async (missed, due) => {
    const from = await minutesAgo(130); // resumed 130 minutes in (and a few seconds), by the database's clock
    const m = minutesFrom(from);
    const id = await perMinute(missed, from);
    await sweep.runOnce(from);
    await schedules.setPaused(1, id, true);
    await schedules.setPaused(1, id, false);
    const resumedAt = m(130);
    await sweep.runOnce(await dbNow());
    const made = (await occurrences(id)).map((o) => o.at);
    expect(made.filter((t) => t <= resumedAt)).toEqual(due.map(m));
    expect(made.filter((t) => t > resumedAt)[0]).toBe(m(131));
  });

  it('an edit of payload, kind or maxAttempts makes the occurrences not due within 2 minutes again with it; those due sooner, or waiting, stay', async () => {
    const from = await minutesAgo(2); // edited 2 minutes in (and a few seconds), by the database's clock
    const m = minutesFrom(from);
    const id = await perMinute('skip', from);
    await sweep.runOnce(from);
    await db.dataSource.query(`UPDATE jobs SET state = 'r', attempts = 1 WHERE key = $1`, [occurrenceKey(id, new Date(m(0)))]);
    await db.dataSource.query(`UPDATE jobs SET state = 'q' WHERE key = ANY($1)`, [[1, 2].map((n) => occurrenceKey(id, new Date(m(n))))]);
    // The second and third are due and queued behind the tenant's limit when the edit lands.
    const edited = await schedules.update(1, id, { kind: 'http', payload: { v: 2 }, maxAttempts: 7 });
    expect(edited).toMatchObject({ removed: { count: 56 }, schedule: { nextRunAt: new Date(m(5)) } }); // the fourth and fifth run as made: the sweep's next run (60 s) would make them late
    await sweep.runOnce(new Date(from.getTime() + 40_000));
    const rows = await occurrences(id);
    expect(rows.map((o) => o.at)).toEqual(Array.from({ length: 61 }, (_, i) => m(i))); // none lost
    const values = (o: (typeof rows)[number]) => [o.kind, o.payload, o.max_attempts];
    expect(rows.slice(0, 5).map(values)).toEqual(Array(5).fill(['noop', { v: 1 }, 3]));
    expect(rows.slice(5).map(values)).toEqual(Array(56).fill(['http', { v: 2 }, 7]));
  });

  it('a cron change removes the occurrences not due yet; one due and waiting (a limit), and one waiting for its retry, still run', async () => {
    const from = await minutesAgo(3); // changed 3 minutes in (and a few seconds), by the database's clock
    const m = minutesFrom(from);
    const id = await perMinute('skip', from);
    await sweep.runOnce(from);
    // The first is due and waits (a limit), the second waits for its retry 5 minutes in, the third ran.
    await db.dataSource.query(`UPDATE jobs SET state = 'd', attempts = 1 WHERE key = $1`, [occurrenceKey(id, new Date(m(2)))]);
    await db.dataSource.query(`UPDATE jobs SET state = 'q', attempts = 1, run_at = $2 WHERE key = $1`, [occurrenceKey(id, new Date(m(1))), new Date(m(5))]);
    const every5 = parseSchedule('*/5 * * * *', 'UTC');
    const changed = await schedules.update(1, id, { cron: '*/5 * * * *', timing: { schedule: every5, from: { cron: '* * * * *', timezone: 'UTC' } } });
    expect(changed).toMatchObject({ removed: { count: 57 } }); // the fifth … the 61st; the fourth is due now
    const left = (await occurrences(id)).map((o) => [o.at, o.state, o.attempts]);
    expect(left).toEqual([[m(0), 's', 0], [m(2), 'd', 1], [m(3), 's', 0], [m(5), 'q', 1]]);
  });
});
