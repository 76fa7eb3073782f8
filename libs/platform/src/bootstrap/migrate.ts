import { createDataSource, databaseConfigFromEnv, redactUrl, runMigrations } from '@almanac/persistence';
import { type Env, readSetting } from '@almanac/config';

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/**
 * Applies pending migrations with its own one-connection DataSource and closes it, so it can
 * run before any role starts (boot with `migrate: true`) or alone (`npm run migrate`).
 * Returns the names of the migrations applied (empty when the schema was current). Throws
 * `ConfigError` for a bad DATABASE_URL and `MigrationError` (with the cause) for the rest.
 */
export async function runMigrationsFromEnv(env: Env = process.env): Promise<string[]> {
  const db = databaseConfigFromEnv(env);
  const statementLockTimeoutMs = readSetting(env, 'ALMANAC_MIGRATION_LOCK_TIMEOUT_MS');
  const ds = createDataSource({ url: db.url, poolSize: 1 });
  try {
    await ds.initialize();
  } catch (err) {
    throw new MigrationError(`cannot connect to ${redactUrl(db.url)}: ${describePgError(err)}`, { cause: err });
  }
  try {
    return await runMigrations(ds, { statementLockTimeoutMs });
  } catch (err) {
    throw new MigrationError(`a migration failed on ${redactUrl(db.url)}: ${describePgError(err)}`, { cause: err });
  } finally {
    await ds.destroy().catch(() => undefined);
  }
}

/** The driver's message plus the hint a person needs for the usual first-run failures. */
export function describePgError(err: unknown): string {
  const e = err as { code?: string; message?: string } | null;
  const message = e?.message || String(err);
  switch (e?.code) {
    case 'ECONNREFUSED':
      return `${message} (is Postgres running?)`;
    case '3D000':
      return `${message} (create it, e.g. createdb -h 127.0.0.1 -U postgres <name>)`;
    case '28P01':
    case '28000':
      return `${message} (check the user and password in DATABASE_URL)`;
    default:
      return message;
  }
}
