import { ReadyQueues } from '@almanac/delivery';
import { SweepsRepository, WorkersRepository } from '@almanac/persistence';
import { HotQueue, MetricsService } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { insertJobs, inQueue, statesOf } from '@almanac/testing/promoter-rows';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { RescueSweep } from './rescue.sweep';

describe('RescueSweep (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    queue = HotQueue.open(redis.connection, redis.prefix);
  });
  afterAll(async () => {
    await queue.close();
    await redis.cleanup();
    await db.drop();
  });

  it('counts the rows it moved when Redis then refuses: they are moved, and no later run finds them running', async () => {
    const metrics = new SweepMetrics(new MetricsService());
    const rescue = new RescueSweep(new WorkersRepository(db.dataSource), new SweepsRepository(db.dataSource), new ReadyQueues(redis.connection, redis.prefix),
      queue, { batchSize: 100, watch: { look: () => [] } }, metrics);
    const leaseOut = new Date(Date.now() - 60_000);
    const back = await insertJobs(db.dataSource, { count: 1, state: 'r', start: leaseOut, leaseUntil: leaseOut, attempts: 1 });
    const last = await insertJobs(db.dataSource, { count: 1, state: 'r', start: leaseOut, leaseUntil: leaseOut, attempts: 3, maxAttempts: 3 });
    jest.spyOn(queue, 'enqueue').mockRejectedValueOnce(new Error('OOM command not allowed when used memory > maxmemory'));
    await expect(rescue.runOnce(new Date())).rejects.toThrow(/OOM/);
    expect(await statesOf(db.dataSource, [...back, ...last])).toEqual({ q: 1, x: 1 });
    await rescue.runOnce(new Date()); // sends the hint the first could not
    expect(await inQueue(queue, back)).toBe(1);
    const workerLost = (await metrics.requeued.get()).values.find((v) => v.labels.reason === 'worker_lost');
    expect(workerLost?.value).toBe(1);
    expect((await metrics.leaseDead.get()).values[0]?.value).toBe(1);
    jest.restoreAllMocks();
  });
});
