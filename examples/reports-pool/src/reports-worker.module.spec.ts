import { KindsRepository } from '@almanac/persistence';
import { createRoleApp, loadConfig } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import type { INestApplication } from '@nestjs/common';
import { ReportsWorkerModule } from './reports-worker.module';

describe('the reports pool, a worker built outside the core', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let app: INestApplication | undefined;
  const saved = { ...process.env };

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
  });
  afterAll(async () => {
    await app?.close();
    await redis.cleanup();
    await db.drop();
    process.env = saved;
  });

  it('boots as a worker role and registers its kind in its own pool, with its schema', async () => {
    const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: redis.prefix, ALMANAC_LOG_LEVEL: 'silent', ALMANAC_WORKER_POOLS: 'reports', REPORTS_DIR: '/tmp/reports-test' };
    Object.assign(process.env, env); // role settings are read from the environment at boot
    app = await createRoleApp([ReportsWorkerModule], { config: loadConfig(env), role: 'worker' });
    await app.init();
    const kinds = await new KindsRepository(db.dataSource).list();
    expect(kinds).toEqual([
      expect.objectContaining({ kind: 'report-export', pool: 'reports', timeoutMs: 30_000, payloadSchema: expect.objectContaining({ required: ['day', 'total'] }) }),
    ]);
  });
});
