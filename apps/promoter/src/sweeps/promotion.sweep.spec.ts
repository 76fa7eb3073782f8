import { SweepsRepository } from '@almanac/persistence';
import { DELIVERY_LEAD_MS, HotQueue, MetricsService, queueJobId } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { insertJobs, inQueue, queuedCount, statesOf } from '../testing/fixtures';
import { PromotionSweep, type PromotionFaults } from './promotion.sweep';
import { SweepMetrics } from './sweep-metrics';

const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:20:00Z');

class SimulatedCrash extends Error {}

describe('PromotionSweep (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;
  let repo: SweepsRepository;
  let metrics: SweepMetrics;

  const sweep = (faults: PromotionFaults = {}, batchSize = 1000, maxPerRun = 1_000_000, concurrency = 1) =>
    new PromotionSweep(repo, queue, { hotHorizonMs: 24 * HOUR, batchSize, maxPerRun, concurrency }, metrics, faults);

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    repo = new SweepsRepository(db.dataSource);
    metrics = new SweepMetrics(new MetricsService());
  });
  beforeEach(async () => {
    queue = HotQueue.open(redis.connection, `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`);
    await db.dataSource.query('TRUNCATE jobs');
  });
  afterEach(async () => queue.close());
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it('promotes whole hour buckets up to hour(now + horizon), leaves later ones cold', async () => {
    // now + 24 h = 2026-11-30T10:20Z: its bucket [10:00, 11:00) is promoted whole (rounded up).
    const inside = await insertJobs(db.dataSource, { count: 10, start: new Date('2026-11-30T10:59:59.000Z') });
    const edge = await insertJobs(db.dataSource, { count: 1, start: new Date('2026-11-30T10:59:59.999Z') });
    const beyond = await insertJobs(db.dataSource, { count: 10, start: new Date('2026-11-30T11:00:00.000Z') });
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ promoted: 11, batches: 1 });
    expect(await statesOf(db.dataSource, [...inside, ...edge])).toEqual({ q: 11 });
    expect(await statesOf(db.dataSource, beyond)).toEqual({ s: 10 });
    expect(await inQueue(queue, inside)).toBe(10);
    expect(await inQueue(queue, beyond)).toBe(0);
    const job = await queue.queue.getJob(queueJobId(inside[0]));
    expect(job?.opts.delay).toBe(new Date('2026-11-30T10:59:59.000Z').getTime() - NOW.getTime() - DELIVERY_LEAD_MS);
    expect(job?.data).toEqual({ t: 1, d: new Date('2026-11-30T10:59:59.000Z').getTime() });
  });

  it('sends rows that are already overdue (promoter was down) with delay 0', async () => {
    const ids = await insertJobs(db.dataSource, { count: 5, start: new Date(NOW.getTime() - 3 * 24 * HOUR), stepMs: 1000 });
    await sweep().runOnce(NOW);
    const jobs = await Promise.all(ids.map((id) => queue.queue.getJob(queueJobId(id))));
    expect(jobs.map((j) => j?.opts.delay)).toEqual([0, 0, 0, 0, 0]);
    expect((await queue.queue.getJobCounts('waiting')).waiting).toBe(5);
  });

  it('works in batches and stops on the first short batch', async () => {
    await insertJobs(db.dataSource, { count: 250, start: NOW, stepMs: 1000 });
    const res = await sweep({}, 100).runOnce(NOW);
    expect(res).toEqual({ promoted: 250, batches: 3 });
    expect(await queuedCount(queue)).toBe(250);
    expect(await sweep({}, 100).runOnce(NOW)).toEqual({ promoted: 0, batches: 1 });
  });

  it('caps one run at maxPerRun and asks to be called again', async () => {
    await insertJobs(db.dataSource, { count: 30, start: NOW });
    expect(await sweep({}, 10, 20).runOnce(NOW)).toEqual({ promoted: 20, batches: 2, more: true });
    expect(await sweep({}, 10, 20).runOnce(NOW)).toEqual({ promoted: 10, batches: 2 }); // a full last batch costs one empty claim
  });

  it('crash after the commit, before the publish: rows are queued without a copy, where the overdue scan finds them', async () => {
    const ids = await insertJobs(db.dataSource, { count: 300, start: new Date(NOW.getTime() + HOUR), stepMs: 10 });
    const crash = sweep({
      afterClaim: () => {
        throw new SimulatedCrash('killed between COMMIT and addBulk');
      },
    });
    await expect(crash.runOnce(NOW)).rejects.toThrow(SimulatedCrash);
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 300 });
    expect(await queuedCount(queue)).toBe(0);
    // The overdue sweep's scan (queued rows past due + grace) returns every one of them.
    const seen: string[] = [];
    await repo.scanQueued(new Date(NOW.getTime() + 2 * HOUR), 1000, 1e6, async (rows) => void seen.push(...rows.map((r) => r.id)));
    expect(seen.sort()).toEqual([...ids].sort());
  });

  it('crash after the publish: nothing left to do, nothing doubled', async () => {
    const ids = await insertJobs(db.dataSource, { count: 50, start: new Date(NOW.getTime() + HOUR) });
    const crash = sweep({
      afterEnqueue: () => {
        throw new SimulatedCrash('killed after addBulk');
      },
    });
    await expect(crash.runOnce(NOW)).rejects.toThrow(SimulatedCrash);
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 50 });
    expect(await sweep().runOnce(NOW)).toMatchObject({ promoted: 0 });
    expect(await queuedCount(queue)).toBe(50);
  });

  it('holds no row lock or transaction while Redis answers: a cancel of a row being published does not wait', async () => {
    const ids = await insertJobs(db.dataSource, { count: 20, start: NOW });
    let entered!: () => void;
    let release!: () => void;
    const publishing = new Promise<void>((r) => (entered = r));
    const slowRedis = new Promise<void>((r) => (release = r));
    const slow = new PromotionSweep(
      repo,
      { enqueue: async () => { entered(); await slowRedis; } },
      { hotHorizonMs: 24 * HOUR, batchSize: 1000, maxPerRun: 1000, concurrency: 1 },
    );
    const run = slow.runOnce(NOW);
    await publishing;
    const [, cancelled] = await db.dataSource.transaction(async (m) => {
      await m.query(`SET LOCAL lock_timeout = '200ms'`);
      return m.query<[unknown, number]>(`UPDATE jobs SET state = 'c' WHERE id = $1 AND state = 'q'`, [ids[0]]);
    });
    expect(cancelled).toBe(1);
    release();
    expect(await run).toMatchObject({ promoted: 20 });
  });

  it('a failing Redis leaves every row scheduled for the next run', async () => {
    const ids = await insertJobs(db.dataSource, { count: 20, start: NOW });
    const broken = new PromotionSweep(
      repo,
      { enqueue: () => Promise.reject(new Error('READONLY You cannot write against a read only replica')) },
      { hotHorizonMs: 24 * HOUR, batchSize: 1000, maxPerRun: 1000, concurrency: 1 },
    );
    await expect(broken.runOnce(NOW)).rejects.toThrow('READONLY');
    expect(await statesOf(db.dataSource, ids)).toEqual({ s: 20 });
  });

  it('two replicas at once promote every row exactly once (SKIP LOCKED)', async () => {
    const ids = await insertJobs(db.dataSource, { count: 2000, start: NOW, stepMs: 5 });
    const [a, b] = await Promise.all([sweep({}, 100).runOnce(NOW), sweep({}, 100).runOnce(NOW)]);
    expect(a.promoted + b.promoted).toBe(2000);
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 2000 });
    expect(await queuedCount(queue)).toBe(2000);
  });

  it('parallel lanes in one run promote every row once, and a failing lane fails the run only after the others stop', async () => {
    const ids = await insertJobs(db.dataSource, { count: 1000, start: NOW, stepMs: 5 });
    expect(await sweep({}, 100, 1e6, 3).runOnce(NOW)).toMatchObject({ promoted: 1000 });
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 1000 });
    await db.dataSource.query(`UPDATE jobs SET state = 's'`);
    let calls = 0;
    const crashing = sweep({ afterEnqueue: () => { if (++calls === 2) throw new SimulatedCrash('lane crash'); } }, 100, 1e6, 3);
    await expect(crashing.runOnce(NOW)).rejects.toThrow(SimulatedCrash);
    const states = await statesOf(db.dataSource, ids);
    expect((states.q ?? 0) + (states.s ?? 0)).toBe(1000);
    // Lanes stop after their batch in flight: the batch done before the crash, the crashed one
    // (committed before its publish) and at most one more claim per other lane.
    expect(states.q ?? 0).toBeLessThanOrEqual(400);
  });

  it('counts almanac_promoted_total', async () => {
    const before = (await metrics.promoted.get()).values[0]?.value ?? 0;
    await insertJobs(db.dataSource, { count: 7, start: NOW });
    await sweep().runOnce(NOW);
    expect((await metrics.promoted.get()).values[0]?.value).toBe(before + 7);
  });

  it('scans jobs_cold_due by index range: cost follows the promoted rows, not the table', async () => {
    // 200k cold rows spread over a year, 500 due in the next hours.
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1, 'big-' || g, 'noop', $1::timestamptz + interval '2 days' + (g % 365) * interval '1 day', 's'
         FROM generate_series(1, 200000) g`,
      [NOW],
    );
    await insertJobs(db.dataSource, { count: 500, start: NOW, stepMs: 1000 });
    await db.dataSource.query('ANALYZE jobs');
    const plan = await repo.explainColdClaim(new Date(NOW.getTime() + 24 * HOUR), 5000);
    expect(plan).toMatch(/Index Scan using jobs_cold_due/);
    expect(plan).not.toMatch(/Seq Scan/);
    expect(await sweep().runOnce(NOW)).toMatchObject({ promoted: 500 });
  });
});
