import type { RecurringRepository } from '@almanac/persistence';
import { DAY, HOUR, NOW, openRecurringDb, recurringHelpers } from '@almanac/testing/recurring-rig';
import type { TestDatabase } from '@almanac/testing/test-db';
import type { SweepMetrics } from '../sweeps/sweep-metrics';

/** The recurring sweep's batches: split between replicas, capped per run, bounded by rows and bytes, fair between tenants. */
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

  it('works in batches across many schedules, and two replicas at once split them (SKIP LOCKED)', async () => {
    await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at)
       SELECT 1, 'bulk-' || g, 'noop', '0 * * * *', 'UTC', '2026-11-30T10:00:00Z' FROM generate_series(1, 2500) g`,
    );
    const [a, b] = await Promise.all([
      sweep({ batchSize: 200, concurrency: 2 }).runOnce(NOW),
      sweep({ batchSize: 200, concurrency: 2 }).runOnce(NOW),
    ]);
    expect(a.schedules + b.schedules).toBe(2500);
    expect(a.inserted + b.inserted).toBe(2500);
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs`);
    expect(n).toBe(2500);
  });

  it('caps one run and asks to be called again; calls onMaterialised when rows were inserted', async () => {
    await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at)
       SELECT 1, 'cap-' || g, 'noop', '0 * * * *', 'UTC', '2026-11-30T10:00:00Z' FROM generate_series(1, 30) g`,
    );
    const calls: Date[] = [];
    const hook = async (now: Date) => calls.push(now);
    expect(await sweep({ batchSize: 10, maxPerRun: 20, onMaterialised: hook }).runOnce(NOW)).toMatchObject({ schedules: 20, more: true });
    expect(await sweep({ batchSize: 10, maxPerRun: 20, onMaterialised: hook }).runOnce(NOW)).toMatchObject({ schedules: 10 });
    expect(await sweep({ batchSize: 10, maxPerRun: 20, onMaterialised: hook }).runOnce(NOW)).toMatchObject({ schedules: 0 });
    expect(calls).toHaveLength(2); // with the run's time as it went on: promotion's delays count from there
    for (const at of calls) expect(at.getTime() - NOW.getTime()).toBeGreaterThanOrEqual(0);
    for (const at of calls) expect(at.getTime() - NOW.getTime()).toBeLessThan(5000);
  });

  describe('bounded by rows and bytes, and fair between tenants', () => {
    /** Rows and payload bytes each transaction inserted (observed around the real repository). */
    function recordBatches(): { rows: number; bytes: number }[] {
      const seen: { rows: number; bytes: number }[] = [];
      const original = repo.materialiseDueSchedules.bind(repo);
      jest.spyOn(repo, 'materialiseDueSchedules').mockImplementation((until, limit, plan, exclude) =>
        original(until, limit, (schedules) => {
          const planned = plan(schedules);
          seen.push({ rows: planned.rows.length, bytes: planned.rows.reduce((n, r) => n + (r.payloadJson?.length ?? 0), 0) });
          return planned;
        }, exclude),
      );
      return seen;
    }
    afterEach(() => jest.restoreAllMocks());

    it('splits per-minute schedules with 2 KB payloads into transactions of bounded rows and bytes, and still materialises the whole horizon in one run', async () => {
      const payload = { blob: 'x'.repeat(2048) };
      const ids = await Promise.all(Array.from({ length: 5 }, () => schedule({ cron: '* * * * *', nextRunAt: NOW, payload })));
      const batches = recordBatches();
      const res = await sweep({ maxBatchRows: 1000, maxBatchBytes: 256 * 1024 }).runOnce(NOW);
      const perSchedule = await Promise.all(ids.map(async (id) => (await occurrences(id)).length));
      expect(perSchedule.every((n) => n === perSchedule[0] && n >= 1440)).toBe(true); // every minute of the 24 h horizon
      expect(res.inserted).toBe(5 * perSchedule[0]); // in this one run
      expect(batches.length).toBeGreaterThan(1);
      for (const b of batches) {
        expect(b.rows).toBeLessThanOrEqual(1000);
        expect(b.bytes).toBeLessThanOrEqual(256 * 1024);
      }
      for (const id of ids) expect((await nextRunAt(id))!.getTime()).toBeGreaterThan(NOW.getTime() + DAY - 60_000);
    });

    it("one tenant at its occurrences-per-run quota waits for the next run; another tenant's schedules materialise meanwhile", async () => {
      const noisy = await Promise.all(Array.from({ length: 4 }, () => schedule({ tenantId: 1, cron: '* * * * *', nextRunAt: NOW })));
      const quiet = await schedule({ tenantId: 2, cron: '0 * * * *', nextRunAt: new Date(NOW.getTime() + HOUR) });
      const near = 10 * 60e3;
      const first = await sweep({ batchSize: 2, maxPerTenantPerRun: 100, nearMs: near }).runOnce(NOW);
      expect(first.tenantsAtQuota).toBe(1);
      expect(await occurrences(quiet)).toHaveLength(23); // 12:00 today … 10:00 tomorrow
      const counts = async () => Promise.all(noisy.map(async (id) => (await occurrences(id)).length));
      const nearRows = (await counts()).reduce((a, b) => a + b, 0);
      expect(nearRows).toBeLessThanOrEqual(4 * 12 + 100); // the near ten minutes for each, then the quota
      // Every noisy schedule got its next minutes, so none waits with an occurrence about to turn late.
      for (const id of noisy) expect((await nextRunAt(id))!.getTime()).toBeGreaterThan(NOW.getTime() + near);
      await sweep({ batchSize: 2, maxPerTenantPerRun: 100, nearMs: near }).runOnce(new Date(NOW.getTime() + 60_000));
      expect((await counts()).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(nearRows + 100); // goes on where the quota stopped it
      // Nothing was dropped as missed along the way.
      const res = await sweep({ batchSize: 2, maxPerTenantPerRun: 100, nearMs: near }).runOnce(new Date(NOW.getTime() + 8 * 60_000));
      expect(res.occurrences.skipped).toBe(0);
    });
  });
});
