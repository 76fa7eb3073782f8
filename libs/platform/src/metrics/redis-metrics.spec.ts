import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { Queue } from 'bullmq';
import { MetricsService } from './metrics.service';
import { RedisMetrics } from './redis-metrics';

describe('RedisMetrics (Redis)', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await createTestRedis();
    await redis.connection.ping();
  });
  afterAll(() => redis.cleanup());

  it("counts the queue its owner has at each scrape: a hot queue that replaced its BullMQ Queue is not read through the closed one", async () => {
    // The first Queue's setup failed (its connection ended): every call on it fails.
    const ended = redis.connection.duplicate();
    ended.disconnect();
    const first = new Queue('hot', { connection: ended, prefix: redis.prefix });
    first.on('error', () => undefined);
    const second = new Queue('hot', { connection: redis.connection.duplicate(), prefix: redis.prefix });
    let current = first;
    const metrics = new MetricsService();
    const redisMetrics = new RedisMetrics(metrics, redis.connection);
    redisMetrics.onModuleInit();
    redisMetrics.trackQueue(() => current);
    try {
      await second.add('e', {}, { delay: 60_000 });
      current = second; // replaced, as HotQueue does when a setup failed
      await first.close().catch(() => undefined);
      expect(await metrics.registry.getSingleMetricAsString('almanac_queue_jobs')).toContain('almanac_queue_jobs{queue="hot",state="delayed"} 1');
    } finally {
      await second.obliterate({ force: true });
      await second.close();
    }
  });
});
