import { TenantStatsRepository } from '@almanac/persistence';
import { MetricsService, TenantLabels } from '@almanac/platform';
import { insertJob } from '@almanac/testing/job-rows';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { SweepMetrics } from './sweep-metrics';
import { TenantBacklogSweep } from './tenant-backlog.sweep';

const NOW = Date.parse('2026-12-01T09:00:00Z');

describe('TenantBacklogSweep', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let n = 0;

  beforeAll(async () => {
    db = await createTestDatabase(2);
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });
  beforeEach(async () => {
    await db.dataSource.query('DELETE FROM jobs');
  });

  /** `count` rows for `tenant`, queued (or `state`), the oldest `ageS` seconds before NOW. */
  async function rows(tenant: number, count: number, ageS: number, state = 'q'): Promise<void> {
    for (let i = 0; i < count; i++) await insertJob(db.dataSource, tenant, `k${n++}`, NOW - (ageS - i) * 1000, state);
  }

  function setup(top: number, scanRows = 10_000) {
    const metricsService = new MetricsService();
    const metrics = new SweepMetrics(metricsService);
    const sweep = new TenantBacklogSweep(
      new TenantStatsRepository(db.dataSource),
      (ids) => TenantLabels.publish(redis.connection, redis.prefix, ids),
      { top, scanRows },
      metrics,
    );
    const series = async (name: string) => {
      const text = await metricsService.registry.getSingleMetricAsString(name);
      return Object.fromEntries([...text.matchAll(/\{tenant="([^"]+)"\} (\S+)/g)].map((m) => [m[1], Number(m[2])]));
    };
    return { sweep, series };
  }

  it('exports the top N tenants by due backlog and sums the rest as "other", maxing their age', async () => {
    await rows(1, 5, 60);
    await rows(2, 3, 10);
    await rows(3, 2, 300); // smaller backlog, but the oldest job: its age shows under "other"
    await rows(4, 1, 5);
    await rows(5, 4, 0, 's'); // cold rows are not backlog
    await insertJob(db.dataSource, 6, `k${n++}`, NOW + 5000, 'q'); // queued but not due yet
    const { sweep, series } = setup(2);

    const res = await sweep.runOnce(new Date(NOW));

    expect(res.truncated).toBe(false);
    expect(await series('almanac_tenant_backlog')).toEqual({ 1: 5, 2: 3, other: 3 });
    expect(await series('almanac_tenant_oldest_due_seconds')).toEqual({ 1: 60, 2: 10, other: 300 });
    expect(await redis.connection.get(`${redis.prefix}:almanac:tenants:top`)).toBe('1,2');
  });

  it('removes the series of a tenant that dropped out of the top N, and publishes the new set', async () => {
    await rows(1, 3, 30);
    await rows(2, 2, 20);
    const { sweep, series } = setup(1);
    await sweep.runOnce(new Date(NOW));
    expect(await series('almanac_tenant_backlog')).toEqual({ 1: 3, other: 2 });

    await db.dataSource.query(`UPDATE jobs SET state = 'd' WHERE tenant_id = 1`); // tenant 1 drained
    await rows(2, 2, 10);
    await sweep.runOnce(new Date(NOW + 15_000));

    expect(await series('almanac_tenant_backlog')).toEqual({ 2: 4, other: 0 });
    expect(await series('almanac_tenant_oldest_due_seconds')).toEqual({ 2: 35, other: 0 });
    expect(await redis.connection.get(`${redis.prefix}:almanac:tenants:top`)).toBe('2');
  });

  it('reads at most its cap of rows, oldest first, and says the counts are lower bounds', async () => {
    await rows(1, 4, 100);
    await rows(2, 3, 10);
    const { sweep, series } = setup(5, 5);

    const res = await sweep.runOnce(new Date(NOW));

    expect(res.truncated).toBe(true);
    expect(await series('almanac_tenant_backlog')).toEqual({ 1: 4, 2: 1, other: 0 });
  });

  it('with nothing due, exports only "other" at zero and publishes an empty set', async () => {
    const { sweep, series } = setup(10);
    await redis.connection.set(`${redis.prefix}:almanac:tenants:top`, '7');

    await sweep.runOnce(new Date(NOW));

    expect(await series('almanac_tenant_backlog')).toEqual({ other: 0 });
    expect(await redis.connection.get(`${redis.prefix}:almanac:tenants:top`)).toBe('');
  });
});
