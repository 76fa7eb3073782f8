import { createRoleApp, loadConfig } from '@almanac/platform';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { HotQueue } from '@almanac/platform';
import { promoterConfigFromEnv } from './promoter-config';
import { PromoterModule } from './promoter.module';
import { buildSweeps } from './sweeps.module';
import { SweepRunner } from './sweeps/sweep-runner';

describe('PromoterModule wiring', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let app: INestApplication;

  beforeAll(async () => {
    db = await createTestDatabase(3);
    redis = await createTestRedis();
    const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: redis.prefix, ALMANAC_LOG_LEVEL: 'silent' };
    app = await createRoleApp([PromoterModule], { config: loadConfig(env), role: 'promoter' });
    await app.init();
    await app.getHttpAdapter().getInstance().ready(); // Fastify answers supertest once ready
  }, 60_000);
  afterAll(async () => {
    await app.close();
    await redis.cleanup();
    await db.drop();
  });

  it('starts the sweeps at boot and exports their metrics at zero before any work', async () => {
    const runner = app.get(SweepRunner);
    expect(runner).toBeInstanceOf(SweepRunner);
    const res = await request(app.getHttpServer()).get('/metrics');
    for (const line of [
      'almanac_sweep_runs_total{sweep="promotion",outcome="error"} 0',
      'almanac_sweep_runs_total{sweep="epoch_watch",outcome="error"} 0',
      'almanac_overdue_requeued_total{reason="redis_lost"}',
      'almanac_schedule_occurrences_total{outcome="skipped"} 0',
      'almanac_promoted_total',
      'almanac_retention_removed_total{keys="reserved"} 0',
      'almanac_retention_behind_seconds 0',
      '# TYPE almanac_sweep_duration_seconds histogram',
      '# TYPE almanac_jobs gauge',
    ]) {
      expect(res.text).toContain(line);
    }
  });
});

describe('promoterConfigFromEnv', () => {
  it('has the documented defaults', () => {
    expect(promoterConfigFromEnv({}, 86_400_000)).toEqual({
      hotHorizonMs: 86_400_000,
      promotionIntervalMs: 3_600_000,
      overdueIntervalMs: 30_000,
      recurringIntervalMs: 60_000,
      recurringHorizonMs: 3_600_000,
      jobStatesIntervalMs: 60_000,
      tenantMetricsTop: 10,
      tenantMetricsScanRows: 100_000,
      overdueGraceMs: 30_000,
      promotionBatchSize: 5000,
      promotionConcurrency: 2,
      promotionMaxPerRun: 1_000_000,
      overdueBatchSize: 5000,
      overdueMaxPerRun: 200_000,
      recurringBatchSize: 1000,
      recurringConcurrency: 2,
      recurringMaxPerRun: 2_000_000,
      recurringBatchRows: 20_000,
      recurringBatchBytes: 16 * 1024 * 1024,
      recurringTenantOccurrencesPerRun: 200_000,
      missedCap: 1000,
      lateToleranceMs: 300_000,
      bulkIntervalMs: 1000,
      bulkMaxJobs: 1_000_000,
      dueSoonScanRows: 1_000_000,
      bulkChunksPerRun: 10,
      retentionIntervalMs: 60_000,
      retentionDefaultSeconds: 30 * 86_400,
      keyReservationDefault: 400 * 86_400,
      retentionBatchSize: 5000,
      retentionMaxPerRun: 200_000,
      storedBytesIntervalMs: 1000,
      storedBytesScanRows: 10_000,
    });
  });

  it('fails fast naming the variable', () => {
    expect(() => promoterConfigFromEnv({ ALMANAC_OVERDUE_INTERVAL_MS: 'soon' }, 1000)).toThrow(/ALMANAC_OVERDUE_INTERVAL_MS/);
    expect(() => promoterConfigFromEnv({ ALMANAC_PROMOTION_BATCH_SIZE: '0' }, 1000)).toThrow(/ALMANAC_PROMOTION_BATCH_SIZE/);
    expect(() => promoterConfigFromEnv({ ALMANAC_TENANT_METRICS_TOP: '500' }, 1000)).toThrow(/ALMANAC_TENANT_METRICS_TOP/);
    expect(() => promoterConfigFromEnv({ ALMANAC_RETENTION_DEFAULT_SECONDS: '60' }, 1000)).toThrow(/ALMANAC_RETENTION_DEFAULT_SECONDS/);
    expect(() => promoterConfigFromEnv({ ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS: 'always' }, 1000)).toThrow(/ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS/);
    expect(promoterConfigFromEnv({ ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS: 'forever' }, 1000).keyReservationDefault).toBe('forever');
  });
});

describe('the recurring sweep as wired', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  beforeAll(async () => {
    db = await createTestDatabase(3);
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it('materialises a schedule an hour ahead: a per-minute schedule holds 60 future rows, not the 1,440 of a day (issue 33, item 3)', async () => {
    const queue = HotQueue.open(redis.connection, redis.prefix);
    try {
      const now = new Date('2026-12-04T10:00:30Z');
      const sweeps = buildSweeps({ config: promoterConfigFromEnv({}, 86_400_000), dataSource: db.dataSource, queue, redis: redis.connection, prefix: redis.prefix });
      await db.dataSource.query(
        `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, missed, paused, next_run_at, max_attempts)
         VALUES (1, 'every-minute', 'noop', '* * * * *', 'UTC', '{"report":"x"}', 'skip', false, '2026-12-04T10:01:00Z', 5)`,
      );
      await sweeps.recurring.runOnce(now);
      const [{ n, last }] = await db.dataSource.query(`SELECT count(*)::int AS n, max(run_at) AS last FROM jobs WHERE key LIKE 'schedule:%'`);
      expect(n).toBe(60);
      expect((last as Date).toISOString()).toBe('2026-12-04T11:00:00.000Z');
    } finally {
      await queue.close();
    }
  });
});
