import { startRedisCluster } from '@almanac/testing/redis-cluster';
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

  it("reports Redis up on a process's first scrape, from the same scrape's INFO as the memory gauge", async () => {
    const metrics = new MetricsService();
    new RedisMetrics(metrics, redis.connection).onModuleInit();
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^almanac_redis_up 1$/m);
    expect(Number(/^almanac_redis_memory_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it("reports a cluster's fullest master, not the sum: summed, one node at its maxmemory hid under the others' (review)", async () => {
    const cluster = await startRedisCluster(3);
    try {
      const full = await cluster.nodeOf('{hot}');
      await full.set('{hot}:filler', 'x'.repeat(8 * 1024 * 1024));
      const used = await Promise.all(cluster.nodes.map(async ({ host, port }) => {
        const info = await cluster.client.nodes('master').find((n) => n.options.port === port && n.options.host === host)!.info('memory');
        return Number(/^used_memory:(\d+)/m.exec(info)![1]);
      }));
      const metrics = new MetricsService();
      new RedisMetrics(metrics, cluster.client).onModuleInit();
      const reported = Number(/^almanac_redis_memory_bytes (\d+)$/m.exec(await metrics.registry.metrics())?.[1]);
      expect(reported).toBeGreaterThanOrEqual(Math.max(...used) * 0.99);
      expect(reported).toBeLessThan(used.reduce((a, b) => a + b, 0) * 0.9); // not the sum
    } finally {
      await cluster.stop();
    }
  });

  it('reports Redis down in the scrape that could not reach it, not the next one', async () => {
    const gone = redis.connection.duplicate();
    await gone.ping();
    const metrics = new MetricsService();
    new RedisMetrics(metrics, gone).onModuleInit();
    expect(await metrics.registry.metrics()).toMatch(/^almanac_redis_up 1$/m);
    gone.disconnect();
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^almanac_redis_up 0$/m);
    expect(text).toMatch(/^almanac_redis_memory_bytes 0$/m);
  });

  it("counts the queue its owner has at each scrape: a hot queue that replaced its BullMQ Queue is not read through the closed one", async () => {
    // The first Queue's setup failed (its connection ended): every call on it fails.
    const ended = redis.connection.duplicate();
    ended.disconnect();
    const first = new Queue('hot', { connection: ended, prefix: redis.prefix });
    first.on('error', () => undefined);
    const secondConnection = redis.connection.duplicate();
    const second = new Queue('hot', { connection: secondConnection, prefix: redis.prefix });
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
      secondConnection.disconnect(); // a Queue leaves a connection it was given open
    }
  });
});
