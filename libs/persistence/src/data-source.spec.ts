import { createTestDatabase, type TestDatabase } from '../../../test/support/test-db';
import { ConfigError, databaseConfigFromEnv } from './database-config';
import { createDataSource } from './data-source';

describe('Postgres waits are bounded (issue 12)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(1);
  });
  afterAll(() => db.drop());

  it('the app roles bound statements, locks, idle transactions and pool waits by default; a bad value names its variable', () => {
    expect(databaseConfigFromEnv({})).toMatchObject({
      statementTimeoutMs: 30_000, lockTimeoutMs: 5_000, idleInTransactionTimeoutMs: 600_000, acquireTimeoutMs: 5_000,
    });
    expect(databaseConfigFromEnv({ ALMANAC_PG_STATEMENT_TIMEOUT_MS: '0' }).statementTimeoutMs).toBe(0);
    expect(() => databaseConfigFromEnv({ ALMANAC_PG_LOCK_TIMEOUT_MS: 'soon' })).toThrow(ConfigError);
    expect(() => databaseConfigFromEnv({ ALMANAC_PG_LOCK_TIMEOUT_MS: 'soon' })).toThrow(/ALMANAC_PG_LOCK_TIMEOUT_MS/);
  });

  it('a statement that runs too long is cancelled by the server', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 1, statementTimeoutMs: 200 });
    await ds.initialize();
    try {
      await expect(ds.query('SELECT pg_sleep(5)')).rejects.toThrow(/statement timeout/);
      await expect(ds.query(`SELECT current_setting('lock_timeout') AS t`)).resolves.toEqual([{ t: '0' }]);
    } finally {
      await ds.destroy();
    }
  });

  it('a lock held elsewhere is waited for only lock_timeout', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2, lockTimeoutMs: 200 });
    await ds.initialize();
    const holder = ds.createQueryRunner();
    try {
      await holder.connect();
      await holder.startTransaction();
      await holder.query(`LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE`);
      await expect(ds.query('SELECT count(*) FROM tenants')).rejects.toThrow(/lock timeout/);
    } finally {
      await holder.rollbackTransaction().catch(() => undefined);
      await holder.release();
      await ds.destroy();
    }
  });

  it('with every pooled connection busy, a query fails after the acquire timeout instead of queueing forever', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 1, acquireTimeoutMs: 200 });
    await ds.initialize();
    const busy = ds.createQueryRunner();
    try {
      await busy.connect(); // the only connection
      await expect(ds.query('SELECT 1')).rejects.toThrow(/timeout/i);
    } finally {
      await busy.release();
      await ds.destroy();
    }
  });
});
