import { createRoleApp, loadConfig } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import type { INestApplication } from '@nestjs/common';
import { WorkerModule } from './worker.module';

describe('the worker role at boot', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let app: INestApplication | undefined;
  const saved = { ...process.env };

  beforeAll(async () => {
    db = await createTestDatabase(2);
    redis = await createTestRedis();
    // The test template carries the example kinds' tables; this database starts as a fresh install would.
    await db.dataSource.query(`DROP TABLE charges, ledger_balances, kind_migrations`);
  });
  afterAll(async () => {
    await app?.close();
    await redis.cleanup();
    await db.drop();
    process.env = saved;
  });

  it("applies the migrations of the kinds it registers before it registers them, and only theirs", async () => {
    const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: redis.prefix, ALMANAC_LOG_LEVEL: 'silent', ALMANAC_POOLS: 'ledger-transfer=ledger' };
    Object.assign(process.env, env); // role settings are read from the environment at boot
    app = await createRoleApp([WorkerModule], { config: loadConfig(env), role: 'worker' });
    await app.init();
    expect(await db.dataSource.query(`SELECT name FROM kind_migrations`)).toEqual([{ name: 'Charges1796400000100' }]);
    expect(await db.dataSource.query(`SELECT to_regclass('charges') AS charges, to_regclass('ledger_balances') AS ledger`)).toEqual([{ charges: 'charges', ledger: null }]);
    expect(await db.dataSource.query(`SELECT kind FROM job_kinds WHERE kind IN ('charge', 'ledger-transfer')`)).toEqual([{ kind: 'charge' }]);
  });
});
