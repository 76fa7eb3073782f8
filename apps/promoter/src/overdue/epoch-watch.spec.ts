import IORedis from 'ioredis';
import { KindCatalog, KindRoutes } from '@almanac/kinds';
import { ReadyQueues } from '@almanac/delivery';
import { KindsRepository, SweepsRepository } from '@almanac/persistence';
import { closeRedis, createRedis, HotQueue, MetricsService, within, type RedisClient } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { startPrivateRedis, type PrivateRedis } from '@almanac/testing/private-redis';
import { insertJobs, inQueue } from '@almanac/testing/promoter-rows';
import { PromotionSweep } from '../sweeps/promotion.sweep';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { EpochWatch, PASS_RETRY_MS } from './epoch-watch';
import { LostHints } from './lost-hints';
import { OverdueSweep } from './overdue.sweep';
import { RedisEpoch } from './redis-epoch';

const NOW = new Date('2026-11-29T10:20:00Z');
const at = (ms: number) => new Date(NOW.getTime() + ms);

/** Rows the API created while its enqueues failed: left `scheduled`, due soon. */
describe('EpochWatch and the rows the API left scheduled (a private Redis, paused)', () => {
  let db: TestDatabase;
  let server: PrivateRedis;
  let admin: IORedis;

  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startPrivateRedis();
    admin = new IORedis(server.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
    await db.drop();
  });

  async function rig(commandTimeoutMs: number) {
    const redis: RedisClient = createRedis({ url: server.url }, { commandTimeoutMs });
    await redis.flushall();
    const repo = new SweepsRepository(db.dataSource);
    const metrics = new SweepMetrics(new MetricsService());
    const queue = HotQueue.open(redis, 'almanac');
    const promotion = new PromotionSweep(repo, queue, { hotHorizonMs: 24 * 3600e3, batchSize: 100, maxPerRun: 1e6, concurrency: 1 }, metrics);
    const epoch = new RedisEpoch(redis, 'almanac');
    const lost = new LostHints(new KindRoutes(new Map()), new KindCatalog(new KindsRepository(db.dataSource), { maxAgeMs: 0, missRefreshMs: 0 }), new ReadyQueues(redis, 'almanac'));
    const overdue = new OverdueSweep(repo, queue, lost, epoch, promotion, { graceMs: 30_000, lookaheadMs: 30_000, batchSize: 100, maxPerRun: 1000 }, metrics);
    const watch = new EpochWatch(epoch, overdue);
    await watch.runOnce(at(-60_000)); // a new Redis: the first recovery writes the marker, long before the stall
    const close = async () => {
      await queue.close();
      await closeRedis(redis);
    };
    return { watch, queue, close };
  }

  /** Pauses every client of the server for `ms`; returns when the pause is over. */
  async function stall(ms: number, during: () => Promise<unknown>): Promise<void> {
    await admin.call('CLIENT', 'PAUSE', String(ms), 'ALL');
    await during();
    await within(ms + 5000, admin.ping(), 'the pause over');
  }

  it('queues at its next tick the rows left scheduled while its look at the epoch failed', async () => {
    const { watch, queue, close } = await rig(200);
    try {
      await stall(800, () => expect(watch.runOnce(NOW)).rejects.toThrow(/timed out/i));
      const [soon] = await insertJobs(db.dataSource, { count: 1, state: 's', start: at(3000) });
      await watch.runOnce(at(1000));
      expect(await inQueue(queue, [soon])).toBe(1);
    } finally {
      await close();
    }
  });

  it('queues at its next tick the rows left scheduled while Redis answered the promoter all along (an outage only the API saw)', async () => {
    const { watch, queue, close } = await rig(5000);
    try {
      expect(await watch.runOnce(at(-30_000))).toEqual({ more: false }); // long after the first recovery: nothing due
      const [soon] = await insertJobs(db.dataSource, { count: 1, state: 's', start: at(3000) });
      expect(await watch.runOnce(NOW)).toEqual({ more: false });
      expect(await inQueue(queue, [soon])).toBe(1); // was left to the overdue sweep's next run (30 s)
    } finally {
      await close();
    }
  });

  it('after a promotion pass failed (Redis answers reads, refuses writes), waits a while before the next one', async () => {
    const { watch, queue, close } = await rig(5000);
    try {
      const [soon] = await insertJobs(db.dataSource, { count: 1, state: 's', start: at(3000) });
      await admin.config('SET', 'maxmemory', '1');
      try {
        await expect(watch.runOnce(NOW)).rejects.toThrow(/maxmemory/);
      } finally {
        await admin.config('SET', 'maxmemory', '0');
      }
      expect(await watch.runOnce(at(1000))).toEqual({ skipped: true }); // each second, a batch queued and put back, an error logged
      expect(await inQueue(queue, [soon])).toBe(0);
      await watch.runOnce(at(PASS_RETRY_MS));
      expect(await inQueue(queue, [soon])).toBe(1);
    } finally {
      await close();
    }
  });
});
