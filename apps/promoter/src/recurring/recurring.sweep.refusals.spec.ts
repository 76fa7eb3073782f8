import type { RecurringRepository } from '@almanac/persistence';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { NOW, openRecurringDb, recurringHelpers } from '@almanac/testing/recurring-rig';
import type { TestDatabase } from '@almanac/testing/test-db';
import type { SweepMetrics } from '../sweeps/sweep-metrics';

/** The recurring sweep's occurrences Postgres refuses or whose key retention retired, and crons that no longer parse: skipped or set aside, never failing the batch. */
describe('RecurringSweep (Postgres)', () => {
  let db: TestDatabase;
  let repo: RecurringRepository;
  let metrics: SweepMetrics;
  const { sweep, schedule, occurrences, nextRunAt } = recurringHelpers(() => ({ db, repo, metrics }));

  beforeAll(async () => {
    ({ db, repo, metrics } = await openRecurringDb());
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, schedules'));
  afterAll(async () => db.drop());

  it("an occurrence whose key retention retired is skipped, not a failure of every tenant's batch", async () => {
    const mine = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    const theirs = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 2 });
    await sweep().runOnce(NOW);
    // Retention removed tenant 1's first occurrence (its key retired), and the schedule comes round to it again (a resume).
    const [first] = await occurrences(mine);
    await db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) SELECT tenant_id, key, current_date, 'd' FROM jobs WHERE key = $1`, [first.key]);
    await db.dataSource.query(`DELETE FROM jobs`);
    await db.dataSource.query(`UPDATE schedules SET next_run_at = '2026-11-29T11:00:00Z'`);
    try {
      await sweep().runOnce(NOW);
      expect((await occurrences(mine)).map((r) => r.key)).not.toContain(first.key);
      expect(await occurrences(mine)).toHaveLength(23);
      expect(await occurrences(theirs)).toHaveLength(24);
    } finally {
      await db.dataSource.query(`TRUNCATE retired_keys`);
    }
  });

  it('materialises a batch again when a key it inserts is retired while the insert waits on the old row', async () => {
    const mine = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    await sweep().runOnce(NOW);
    const [first] = await occurrences(mine);
    await db.dataSource.query(`UPDATE jobs SET state = 'd', finished_at = now() WHERE key = $1`, [first.key]);
    await db.dataSource.query(`UPDATE schedules SET next_run_at = '2026-11-29T11:00:00Z'`);
    // Retention removes the finished occurrence and retires its key, and has not committed when
    // the sweep's insert meets the old row: the insert waits, then finds the row gone.
    const removal = db.dataSource.createQueryRunner();
    await removal.startTransaction();
    try {
      await removal.query(`WITH gone AS (DELETE FROM jobs WHERE key = $1 RETURNING tenant_id, key)
        INSERT INTO retired_keys (tenant_id, key, removed_on, state) SELECT tenant_id, key, current_date, 'd' FROM gone`, [first.key]);
      const run = sweep().runOnce(NOW);
      await someoneWaitsOnALock(db.dataSource);
      await removal.commitTransaction();
      expect(await run).toMatchObject({ schedules: 1, inserted: 0, duplicates: 24 });
      expect((await occurrences(mine)).map((r) => r.key)).not.toContain(first.key);
    } finally {
      if (removal.isTransactionActive) await removal.rollbackTransaction();
      await removal.release();
      await db.dataSource.query(`TRUNCATE retired_keys`);
    }
  });

  it("sets aside (pauses, with lastError) a schedule whose occurrences Postgres refuses, and materialises every other tenant's", async () => {
    const poison = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    const mine = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    const theirs = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 2 });
    // A value Postgres refuses for the poison schedule's rows only (an operator's trigger, a value out of range).
    await db.dataSource.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.key LIKE 'schedule:${poison}:%' THEN RAISE EXCEPTION 'out of range' USING ERRCODE = '22003'; END IF; RETURN NEW; END $$`);
    await db.dataSource.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    try {
      const before = (await metrics.setAside.get()).values.find((v) => v.labels.statement === 'recurring')?.value ?? 0;
      expect(await sweep().runOnce(NOW)).toMatchObject({ inserted: 48 });
      expect(await occurrences(mine)).toHaveLength(24);
      expect(await occurrences(theirs)).toHaveLength(24);
      expect(await occurrences(poison)).toHaveLength(0);
      const [row] = await db.dataSource.query(`SELECT paused, last_error FROM schedules WHERE id = $1`, [poison]);
      expect(row).toEqual({ paused: true, last_error: expect.stringMatching(/^SetAsideError: .*SQLSTATE 22003.*resuming it tries again$/) });
      expect((await metrics.setAside.get()).values.find((v) => v.labels.statement === 'recurring')?.value).toBe(before + 1);
      expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0 }); // the next run is not failed by it again
    } finally {
      await db.dataSource.query(`DROP TRIGGER refuse_poison ON jobs; DROP FUNCTION refuse_poison()`);
    }
  });

  it('parks a schedule whose cron no longer parses instead of failing the batch', async () => {
    const bad = await schedule({ cron: 'every tuesday', nextRunAt: new Date('2026-11-29T11:00:00Z') });
    const good = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z') });
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ schedules: 2, invalid: 1, inserted: 24 });
    expect(await nextRunAt(bad)).toBeNull();
    expect(await occurrences(good)).toHaveLength(24);
  });
});
