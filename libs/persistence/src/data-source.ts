import { DataSource, MigrationExecutor, type MigrationInterface } from 'typeorm';
import { DatabaseConfig } from './database-config';
import { MIGRATIONS } from './migrations';

/** A TypeORM migration class: the scheduler's own (MIGRATIONS) or a kind's (kind-migrations.ts). */
export type MigrationClass = new () => MigrationInterface;

/** Which migrations a DataSource applies, and the table that records them. */
export interface MigrationSet {
  migrations: readonly MigrationClass[];
  tableName: string;
}

const SCHEDULER_MIGRATIONS: MigrationSet = { migrations: MIGRATIONS, tableName: 'migrations' };

export function createDataSource(config: DatabaseConfig, migrationSet: MigrationSet = SCHEDULER_MIGRATIONS): DataSource {
  return new DataSource({
    type: 'postgres',
    url: config.url,
    migrations: [...migrationSet.migrations],
    migrationsTableName: migrationSet.tableName,
    synchronize: false,
    migrationsRun: false,
    extra: {
      max: config.poolSize,
      // No JIT: Almanac sends only short statements, and JIT compiled any whose plan cost passed
      // jit_above_cost. The retention statement, 0.3 ms to run, took 226 ms to compile (EXPLAIN
      // ANALYZE at 20 M jobs, bench/retention.ts); a 5,000-row batch runs in 40 ms without it.
      // A statement whose connection was closed under it (discardConnection: a request answered
      // at its deadline, an abandoned run) ends within a second (PostgreSQL 14+); Postgres would
      // otherwise see the closed socket only when it next writes, after the lock it waits for
      // came free, and commit (measured: an INSERT behind a held lock wrote its row once freed).
      options: '-c jit=off -c client_connection_check_interval=1000',
      // node-postgres sends these as session settings on every new connection.
      ...(config.statementTimeoutMs ? { statement_timeout: config.statementTimeoutMs } : {}),
      ...(config.lockTimeoutMs ? { lock_timeout: config.lockTimeoutMs } : {}),
      ...(config.idleInTransactionTimeoutMs ? { idle_in_transaction_session_timeout: config.idleInTransactionTimeoutMs } : {}),
      // pg-pool: the longest a query waits for a free pooled connection (or a new one).
      ...(config.acquireTimeoutMs ? { connectionTimeoutMillis: config.acquireTimeoutMs } : {}),
    },
  });
}

/**
 * pg_advisory_lock's key for "a runner is applying the scheduler's migrations" (the kinds' own
 * key, 1796400001, is in kind-migrations.ts).
 */
const SCHEDULER_MIGRATIONS_LOCK = 1796400000;

/** The bounds of a migration run's waits, in ms (0 = none). */
export interface MigrationWaits {
  /** For another runner's advisory lock (default 5 min). */
  lockWaitMs?: number;
  /** For each lock a migration statement takes (ALMANAC_MIGRATION_LOCK_TIMEOUT_MS; default none). */
  statementLockTimeoutMs?: number;
}

/**
 * Applies pending migrations, each in its own transaction; a failure throws and must stop boot.
 * Two runners at once (the Job and a `migrate: true` boot, or two boots) would both create the
 * migrations table and both apply the same migration, so each holds a session advisory lock
 * over the whole run: the second waits for the first, then finds nothing pending. The wait is
 * bounded, so a stuck runner fails the others with a clear error instead of hanging them.
 */
export async function runMigrations(dataSource: DataSource, waits: MigrationWaits = {}): Promise<string[]> {
  const { lockWaitMs = 300_000, statementLockTimeoutMs = 0 } = waits;
  const runner = dataSource.createQueryRunner();
  const setLockTimeout = (ms: number) => runner.query(`SELECT set_config('lock_timeout', $1, false)`, [`${ms}ms`]);
  try {
    await setLockTimeout(lockWaitMs);
    await runner.query(`SELECT pg_advisory_lock($1)`, [SCHEDULER_MIGRATIONS_LOCK]).catch((err: { code?: string }) => {
      if (err?.code !== '55P03') throw err; // lock_not_available
      throw new Error(`another runner has been applying migrations for over ${lockWaitMs} ms (advisory lock ${SCHEDULER_MIGRATIONS_LOCK}); retry when it ends`, { cause: err });
    });
    await setLockTimeout(statementLockTimeoutMs);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    const done = await executor.executePendingMigrations();
    return done.map((m) => m.name);
  } finally {
    // Releasing the connection (to the pool) does not end the session: unlock and reset explicitly.
    await runner.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
    await runner.query(`RESET lock_timeout`).catch(() => undefined);
    await runner.release();
  }
}
