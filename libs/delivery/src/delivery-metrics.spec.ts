import { MetricsService, TenantLabels } from '@almanac/platform';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { DeliveryMetrics } from './delivery-metrics';

describe('DeliveryMetrics', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
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
});
