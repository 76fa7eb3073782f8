import { DataSource, type MigrationInterface } from 'typeorm';
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
      options: '-c jit=off',
      // node-postgres sends these as session settings on every new connection.
      ...(config.statementTimeoutMs ? { statement_timeout: config.statementTimeoutMs } : {}),
      ...(config.lockTimeoutMs ? { lock_timeout: config.lockTimeoutMs } : {}),
      ...(config.idleInTransactionTimeoutMs ? { idle_in_transaction_session_timeout: config.idleInTransactionTimeoutMs } : {}),
      // pg-pool: the longest a query waits for a free pooled connection (or a new one).
      ...(config.acquireTimeoutMs ? { connectionTimeoutMillis: config.acquireTimeoutMs } : {}),
    },
  });
}

/** Applies pending migrations; a failure throws and must stop boot. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const done = await dataSource.runMigrations({ transaction: 'each' });
  return done.map((m) => m.name);
}
