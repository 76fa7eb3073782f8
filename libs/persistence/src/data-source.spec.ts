import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { ConfigError } from '@almanac/config';
import { databaseConfigFromEnv } from './database-config';
import { DatabaseConfig } from './database-config';
import { createDataSource } from './data-source';
import type { DataSource } from 'typeorm';

describe('Postgres waits are bounded (issue 12)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(1);
  });
  afterAll(() => db.drop());

  /** A DataSource on the test database with `bounds`, destroyed after `fn`. */
  async function withDataSource(bounds: Omit<DatabaseConfig, 'url'>, fn: (ds: DataSource) => Promise<void>): Promise<void> {
    const ds = createDataSource({ url: db.url, ...bounds });
    await ds.initialize();
    try {
      await fn(ds);
    } finally {
      await ds.destroy();
    }
  }

  it('the app roles bound statements, locks, idle transactions and pool waits by default; a bad value names its variable', () => {
    expect(databaseConfigFromEnv({})).toMatchObject({
      statementTimeoutMs: 30_000, lockTimeoutMs: 5_000, idleInTransactionTimeoutMs: 600_000, acquireTimeoutMs: 5_000,
    });
    expect(databaseConfigFromEnv({ ALMANAC_PG_STATEMENT_TIMEOUT_MS: '0' }).statementTimeoutMs).toBe(0);
    expect(() => databaseConfigFromEnv({ ALMANAC_PG_LOCK_TIMEOUT_MS: 'soon' })).toThrow(ConfigError);
    expect(() => databaseConfigFromEnv({ ALMANAC_PG_LOCK_TIMEOUT_MS: 'soon' })).toThrow(/ALMANAC_PG_LOCK_TIMEOUT_MS/);
  });

  it('compiles nothing with JIT: a 0.3 ms statement took 226 ms to compile on a big table', () =>
    withDataSource({ poolSize: 1 }, async (ds) => {
      await expect(ds.query(`SELECT current_setting('jit') AS jit`)).resolves.toEqual([{ jit: 'off' }]);
    }));

  it('a statement that runs too long is cancelled by the server', () =>
    withDataSource({ poolSize: 1, statementTimeoutMs: 200 }, async (ds) => {
      await expect(ds.query('SELECT pg_sleep(5)')).rejects.toThrow(/statement timeout/);
      await expect(ds.query(`SELECT current_setting('lock_timeout') AS t`)).resolves.toEqual([{ t: '0' }]);
    }));

  it('a lock held elsewhere is waited for only lock_timeout', () =>
    withDataSource({ poolSize: 2, lockTimeoutMs: 200 }, async (ds) => {
      const holder = ds.createQueryRunner();
      try {
        await holder.connect();
        await holder.startTransaction();
        await holder.query(`LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE`);
        await expect(ds.query('SELECT count(*) FROM tenants')).rejects.toThrow(/lock timeout/);
      } finally {
        await holder.rollbackTransaction().catch(() => undefined);
        await holder.release();
      }
    }));

  it('with every pooled connection busy, a query fails after the acquire timeout instead of queueing forever', () =>
    withDataSource({ poolSize: 1, acquireTimeoutMs: 200 }, async (ds) => {
      const busy = ds.createQueryRunner();
      try {
        await busy.connect(); // the only connection
        await expect(ds.query('SELECT 1')).rejects.toThrow(/timeout/i);
      } finally {
        await busy.release();
      }
    }));
});
