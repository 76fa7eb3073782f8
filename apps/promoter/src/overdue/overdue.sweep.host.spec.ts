import { KindsRepository, SweepsRepository } from '@almanac/persistence';
import { ReadyQueues } from '@almanac/delivery';
import { KindCatalog, KindRoutes } from '@almanac/kinds';
import { HotQueue, MetricsService } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { insertJobs, inQueue, queuedRowIds, statesOf } from '@almanac/testing/promoter-rows';
import { PromotionSweep } from '../sweeps/promotion.sweep';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { LostHints } from './lost-hints';
import { type HintCheck, OverdueSweep } from './overdue.sweep';
import { RedisEpoch } from './redis-epoch';

const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:20:00Z');
const GRACE = 30_000;

/** The real lease, 300 ms long (renewed every 100 ms), its signal kept for the test to wait on. */
class ShortLease extends SweepsRepository {
  lost?: AbortSignal;
  override withSweepLease<T>(name: 'overdue' | 'schedule_watch', fn: (lost: AbortSignal) => Promise<T>): Promise<T | null> {
    return super.withSweepLease(name, (lost) => fn((this.lost = lost)), 300);
  }
}

describe('OverdueSweep on one promoter host among others: its lease, its clock (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;

  function build(repo: SweepsRepository, hints?: (lost: LostHints) => HintCheck) {
    const metrics = new SweepMetrics(new MetricsService());
    const promotion = new PromotionSweep(repo, queue, { hotHorizonMs: 24 * HOUR, batchSize: 4, maxPerRun: 1e6, concurrency: 1 }, metrics);
    const ready = new ReadyQueues(redis.connection, redis.prefix);
    const lost = new LostHints(new KindRoutes(new Map()), new KindCatalog(new KindsRepository(db.dataSource), { maxAgeMs: 0, missRefreshMs: 0 }), ready);
    const opts = { graceMs: GRACE, lookaheadMs: 30_000, batchSize: 4, maxPerRun: 100_000 };
    return new OverdueSweep(repo, queue, hints?.(lost) ?? lost, new RedisEpoch(redis.connection, redis.prefix), promotion, opts, metrics);
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    queue = HotQueue.open(redis.connection, redis.prefix);
    await build(new SweepsRepository(db.dataSource)).runOnce(NOW); // first sight of this Redis: writes the epoch marker
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, job_attempts'));
  afterAll(async () => {
    await queue.close();
    await redis.cleanup();
    await db.drop();
  });

  it('stops between batches once a renewal of its lease failed: another replica may be sweeping by then', async () => {
    const late = await insertJobs(db.dataSource, { count: 10, state: 'q', start: new Date(NOW.getTime() - HOUR), stepMs: 1000 });
    const cold = await insertJobs(db.dataSource, { count: 2, start: new Date(NOW.getTime() - 5 * 60e3) });
    const repo = new ShortLease(db.dataSource);
    let first = true;
    const sweep = build(repo, (lost) => ({
      async of(rows, nowMs) {
        if (first) {
          first = false;
          // Taken over during the first batch, as after a stall past the expiry; the renewal finds it gone.
          await db.dataSource.query(`UPDATE sweep_leases SET holder = 'another replica' WHERE name = 'overdue'`);
          await new Promise((r) => repo.lost?.addEventListener('abort', r, { once: true }));
        }
        return lost.of(rows, nowMs);
      },
    }));
    const res = await sweep.runOnce(NOW);
    expect(res.requeued).toMatchObject({ overdue: 4, scheduled_due: 0 }); // the batch in hand, no more
    expect(await inQueue(queue, late)).toBe(4);
    expect(await statesOf(db.dataSource, cold)).toEqual({ s: 2 });
    await db.dataSource.query(`UPDATE sweep_leases SET expires_at = '-infinity' WHERE name = 'overdue'`);
  });

  it('on a host whose clock runs 60 s fast, re-hints no row before it is due by the database (its hint is waiting)', async () => {
    const [soon] = await insertJobs(db.dataSource, { count: 1, state: 'q', start: new Date(Date.now() + 10_000) });
    await queue.enqueue([{ id: soon, dueMs: Date.now() + 10_000, tenantId: 1, kind: 'noop' }], new Date()); // its hint, delayed
    const [lost] = await insertJobs(db.dataSource, { count: 1, state: 'q', start: new Date(Date.now() - GRACE - 10_000) }); // late by any clock
    const res = await build(new SweepsRepository(db.dataSource)).runOnce(new Date(Date.now() + 60_000));
    expect(res.requeued.overdue).toBe(1);
    expect(await inQueue(queue, [lost])).toBe(1);
    expect((await queuedRowIds(queue)).filter((id) => id === soon)).toHaveLength(1); // still its one hint
  });
});
