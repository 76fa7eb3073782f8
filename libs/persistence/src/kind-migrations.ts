import { MigrationExecutor } from 'typeorm';
import type { DatabaseConfig } from './database-config';
import { createDataSource, type MigrationClass } from './data-source';

/** pg_advisory_xact_lock's key for "a worker is applying kind migrations". */
const KIND_MIGRATIONS_LOCK = 1796400001;

/**
 * Applies the migrations of the kinds a worker registers (`HandlerDefinition.migrations`: the
 * tables a kind's handler writes, like the example `charge` kind's `charges`), recorded in their
 * own table, `kind_migrations`, apart from the scheduler's. Workers of a pool boot together, so
 * one applies them at a time: all pending ones in one transaction under an advisory lock. Every
 * lock wait in it (the advisory lock's, a kind's DDL) is bounded by `lockWaitMs`. Returns the names applied.
 */
export async function runKindMigrations(config: DatabaseConfig, migrations: readonly MigrationClass[], lockWaitMs = 30_000): Promise<string[]> {
  if (migrations.length === 0) return [];
  const ds = createDataSource({ url: config.url, poolSize: 1, acquireTimeoutMs: config.acquireTimeoutMs }, { migrations, tableName: 'kind_migrations' });
  await ds.initialize();
  const runner = ds.createQueryRunner();
  try {
    await runner.startTransaction();
    await runner.query(`SELECT set_config('lock_timeout', $1, true)`, [`${lockWaitMs}ms`]);
    await runner.query(`SELECT pg_advisory_xact_lock($1)`, [KIND_MIGRATIONS_LOCK]);
    const executor = new MigrationExecutor(ds, runner);
    executor.transaction = 'all';
    const applied = await executor.executePendingMigrations();
    await runner.commitTransaction();
    return applied.map((m) => m.name);
  } catch (err) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw err;
  } finally {
    await runner.release();
    await ds.destroy().catch(() => undefined);
  }
}
