import { RecurringRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { RecurringSweep } from './recurring.sweep';
import { SchedulePlanner } from './schedule-planner';

const MINUTE = 60e3;
const TOLERANCE = 5 * MINUTE;

/** What is late goes by the database's clock (runs start by it), with `now` (the promoter host's clock) ahead of it. */
describe('RecurringSweep by the database clock (Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('drops no run under `skip` when its host runs ahead of the database by more than the late tolerance', async () => {
    const [{ now: dbNow }] = await db.dataSource.query<{ now: Date }[]>(`SELECT now()`);
    const minute = new Date(Math.floor(dbNow.getTime() / MINUTE) * MINUTE); // due now, by the database's clock
    const [{ id }] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, missed, next_run_at, max_attempts)
       VALUES (1, 'minutely', 'noop', '* * * * *', 'UTC', 'skip', $1, 5) RETURNING id::text AS id`,
      [minute],
    );
    const sweep = new RecurringSweep(new RecurringRepository(db.dataSource), new SchedulePlanner({ missedCap: 100, lateToleranceMs: TOLERANCE }), {
      horizonMs: 10 * MINUTE, batchSize: 100, maxPerRun: 1000, concurrency: 1, maxBatchRows: 1000, maxBatchBytes: 1 << 20, maxPerTenantPerRun: 1000, nearMs: 10 * MINUTE,
    });
    const res = await sweep.runOnce(new Date(dbNow.getTime() + 6 * MINUTE));
    expect(res.occurrences).toMatchObject({ missed: 0, skipped: 0 });
    const [first] = await db.dataSource.query<{ run_at: Date }[]>(`SELECT run_at FROM jobs WHERE key LIKE $1 ORDER BY run_at LIMIT 1`, [`schedule:${id}:%`]);
    expect(first.run_at).toEqual(minute);
  });
});
