import { MetricsService, WaitTimeoutError } from '@almanac/platform';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import IORedis from 'ioredis';
import { createServer, type Server, type Socket } from 'node:net';
import { DeliveryMetrics } from './delivery-metrics';
import { TenantLabels } from './tenant-labels';

describe('TenantLabels', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
  });

  it('labels the published top tenants by id and every other tenant "other"', async () => {
    const labels = new TenantLabels(redis.connection, redis.prefix);
    expect(labels.label(7)).toBe('other'); // nothing read yet

    await TenantLabels.publish(redis.connection, redis.prefix, [7, 12]);
    await labels.refresh();

    expect([labels.label(7), labels.label(12), labels.label(3)]).toEqual(['7', '12', 'other']);
  });

  it("gives a worker's lag a series per top tenant and drops a tenant's series when it leaves the top N", async () => {
    const metricsService = new MetricsService();
    const labels = new TenantLabels(redis.connection, redis.prefix);
    const metrics = new DeliveryMetrics(metricsService, labels);
    const counts = async () => {
      const text = await metricsService.registry.getSingleMetricAsString('almanac_tenant_lag_seconds');
      return Object.fromEntries([...text.matchAll(/_count\{tenant="([^"]+)"\} (\d+)/g)].map((m) => [m[1], Number(m[2])]));
    };
    expect(await counts()).toEqual({ other: 0 }); // present before the first job

    await TenantLabels.publish(redis.connection, redis.prefix, [1, 2]);
    await labels.refresh();
    metrics.observeLag('default', 1, 0.004);
    metrics.observeLag('default', 2, 0.2);
    metrics.observeLag('default', 3, 40);
    expect(await counts()).toEqual({ 1: 1, 2: 1, other: 1 });

    await TenantLabels.publish(redis.connection, redis.prefix, [2]);
    await labels.refresh();
    metrics.observeLag('default', 1, 0.004);
    expect(await counts()).toEqual({ 2: 1, other: 2 });
    expect(await metricsService.registry.getSingleMetricAsString('almanac_dispatch_lag_seconds')).toContain(
      'almanac_dispatch_lag_seconds_count{pool="default"} 4',
    );
  });

  it('keeps the last set when Redis does not answer in time, and ignores a damaged key', async () => {
    await TenantLabels.publish(redis.connection, redis.prefix, [5]);
    const labels = new TenantLabels(redis.connection, redis.prefix, 50);
    await labels.refresh();

    // A "Redis" that accepts the connection and never answers: the read gives up after 50 ms.
    const accepted: Socket[] = [];
    const silent: Server = createServer((socket) => accepted.push(socket)).listen(0, '127.0.0.1');
    await new Promise((resolve) => silent.once('listening', resolve));
    const stalled = new IORedis({ port: (silent.address() as { port: number }).port, host: '127.0.0.1', lazyConnect: true });
    stalled.connect().catch(() => undefined);
    const stalledLabels = new TenantLabels(stalled, redis.prefix, 50);
    try {
      await TenantLabels.publish(redis.connection, redis.prefix, [5]);
      await expect(stalledLabels.refresh()).rejects.toBeInstanceOf(WaitTimeoutError);
      expect(stalledLabels.label(5)).toBe('other'); // nothing read: the previous (empty) set stays
    } finally {
      stalled.disconnect();
      for (const socket of accepted) socket.destroy();
      silent.close();
    }

    await redis.connection.set(`${redis.prefix}:almanac:tenants:top`, 'x,9,,-1');
    await labels.refresh();
    expect([labels.label(5), labels.label(9)]).toEqual(['other', '9']);
  });
});
