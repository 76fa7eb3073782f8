import { RecurringRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { RecurringSweep } from './recurring.sweep';
import { SchedulePlanner } from './schedule-planner';

const MINUTE = 60e3;
const DAY = 24 * 60 * MINUTE;
const NOW = new Date('2026-11-29T10:20:00Z');

/** The step budget a catch-up uses up must not hold back the other schedules of its batch. */
describe('RecurringSweep: one tenant’s catch-up and another’s due schedule (Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  async function schedule(tenantId: number, nextRunAt: Date, missed: string): Promise<string> {
    const [row] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, missed, next_run_at, max_attempts)
       VALUES ($1, $2, 'noop', '* * * * *', 'UTC', $3, $4, 3) RETURNING id::text AS id`,
      [tenantId, `t${tenantId}`, missed, nextRunAt],
    );
    return row.id;
  }

  it('a schedule due now is planned in the batch whose first schedule, 60 days behind, took the step budget', async () => {
    const behind = await schedule(1, new Date(NOW.getTime() - 60 * DAY), 'all');
    const due = await schedule(2, NOW, 'skip');
    const sweep = new RecurringSweep(
      new RecurringRepository(db.dataSource),
      new SchedulePlanner({ missedCap: 100, lateToleranceMs: 5 * MINUTE }),
      // One batch per pass: what one batch does is all this run does.
      { horizonMs: 60 * MINUTE, batchSize: 10, maxPerRun: 10, concurrency: 1, maxBatchRows: 20_000, maxBatchBytes: 16 << 20, maxPerTenantPerRun: 1e6, nearMs: 10 * MINUTE },
    );
    await sweep.runOnce(NOW);
    const [made] = await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM jobs WHERE key = $1`, [`schedule:${due}:2026-11-29T10:20:00Z`]);
    expect(made.n).toBe(1);
    // The catch-up moved on by a slice, and is still behind.
    const [row] = await db.dataSource.query<{ next_run_at: Date }[]>(`SELECT next_run_at FROM schedules WHERE id = $1`, [behind]);
    expect(row.next_run_at.getTime()).toBeGreaterThan(NOW.getTime() - 60 * DAY);
    expect(row.next_run_at.getTime()).toBeLessThan(NOW.getTime());
  });
});
