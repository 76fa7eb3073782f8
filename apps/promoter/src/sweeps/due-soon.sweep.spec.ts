import { DueSoonRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import { insertJob } from '@almanac/testing/job-rows';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { DueSoonSweep } from './due-soon.sweep';
import { SweepMetrics } from './sweep-metrics';

const NOW = Date.parse('2026-12-01T08:50:00Z');
const MIN = 60_000;

describe('DueSoonSweep', () => {
  let db: TestDatabase;
  let n = 0;

  beforeAll(async () => {
    db = await createTestDatabase(2);
    await db.dataSource.query(`INSERT INTO job_kinds (kind, pool, timeout_ms, registered_by, registered_at) VALUES ('http', 'io', 30000, 'w1', now()), ('charge', 'billing', 30000, 'w1', now())`);
  });
  afterAll(() => db.drop());
  beforeEach(() => db.dataSource.query('DELETE FROM jobs'));

  const rows = async (count: number, inMs: number, state: string, kind: string) => {
    for (let i = 0; i < count; i++) await insertJob(db.dataSource, 1 + (i % 3), `k${n++}`, NOW + inMs, state, kind);
  };

  function setup(maxRows = 10_000) {
    const metricsService = new MetricsService();
    const sweep = new DueSoonSweep(new DueSoonRepository(db.dataSource), maxRows, new SweepMetrics(metricsService));
    const series = async () => {
      const text = await metricsService.registry.getSingleMetricAsString('almanac_jobs_due');
      return Object.fromEntries([...text.matchAll(/\{pool="([^"]+)",within="([^"]+)"\} (\S+)/g)].map((m) => [`${m[1]}/${m[2]}`, Number(m[3])]));
    };
    return { sweep, series };
  }

  it('counts each pool\'s unfinished jobs due within 1m, 5m, 10m, 15m and 1h, cold rows included', async () => {
    await rows(2, 30_000, 'q', 'http'); // within 1m
    await rows(3, 4 * MIN, 's', 'http'); // cold, due across the hour boundary (09:00 falls in the hour)
    await rows(4, 20 * MIN, 's', 'charge'); // 09:10, next hour bucket
    await rows(5, 61 * MIN, 's', 'charge'); // beyond the hour
    await rows(1, 2 * MIN, 'q', 'unregistered'); // no worker yet: counted for default
    await rows(6, 2 * MIN, 'd', 'http'); // finished: not work
    await rows(7, -MIN, 'q', 'http'); // already due: the backlog's business, not the look-ahead's
    const { sweep, series } = setup();

    const res = await sweep.runOnce(new Date(NOW));

    expect(res.truncated).toBe(false);
    expect(await series()).toEqual({
      'default/1m': 0, 'default/5m': 1, 'default/10m': 1, 'default/15m': 1, 'default/1h': 1,
      'io/1m': 2, 'io/5m': 5, 'io/10m': 5, 'io/15m': 5, 'io/1h': 5,
      'billing/1m': 0, 'billing/5m': 0, 'billing/10m': 0, 'billing/15m': 0, 'billing/1h': 4,
    });
  });

  it('drops a pool\'s series once it has nothing due (default stays at 0), and says when it hit its cap', async () => {
    await rows(3, 30_000, 'q', 'charge');
    const { sweep, series } = setup(2);
    expect((await sweep.runOnce(new Date(NOW))).truncated).toBe(true);
    expect((await series())['billing/1m']).toBe(2);

    await db.dataSource.query('DELETE FROM jobs');
    await sweep.runOnce(new Date(NOW + 15_000));
    expect(await series()).toEqual({ 'default/1m': 0, 'default/5m': 0, 'default/10m': 0, 'default/15m': 0, 'default/1h': 0 });
  });
});
