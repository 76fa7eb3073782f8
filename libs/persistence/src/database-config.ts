import { ConfigError } from '@almanac/config';

/** Validated database settings. Read once at boot; a bad value stops the process. */
export interface DatabaseConfig {
  url: string;
  poolSize: number;
  /**
   * Bounds on every wait on Postgres, in ms (absent or 0 = none): one statement, one lock, a
   * transaction left idle, and getting a pooled connection. The app roles set them all
   * (databaseConfigFromEnv); migrations and benchmarks, whose statements may rightly be long,
   * do not.
   */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  idleInTransactionTimeoutMs?: number;
  acquireTimeoutMs?: number;
}


export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/almanac';

export function databaseConfigFromEnv(env: NodeJS.ProcessEnv): DatabaseConfig {
  const url = env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('DATABASE_URL is not a URL (expected postgres://user@host:port/database)');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_URL must start with postgres:// (got ${parsed.protocol}//)`);
  }
  if (parsed.pathname.length < 2) throw new ConfigError('DATABASE_URL must name a database');
  const poolSize = Number(env.ALMANAC_DB_POOL_SIZE ?? 10);
  if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 500) {
    throw new ConfigError('ALMANAC_DB_POOL_SIZE must be an integer from 1 to 500');
  }
  return {
    url,
    poolSize,
    statementTimeoutMs: msFromEnv(env, 'ALMANAC_PG_STATEMENT_TIMEOUT_MS', 30_000),
    lockTimeoutMs: msFromEnv(env, 'ALMANAC_PG_LOCK_TIMEOUT_MS', 5_000),
    idleInTransactionTimeoutMs: msFromEnv(env, 'ALMANAC_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS', 600_000),
    acquireTimeoutMs: msFromEnv(env, 'ALMANAC_PG_ACQUIRE_TIMEOUT_MS', 5_000),
  };
}

function msFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 0 || ms > 24 * 3600_000) throw new ConfigError(`${name} must be a whole number of milliseconds from 0 to 86400000 (got ${JSON.stringify(raw)})`);
  return ms;
}

/** The URL with any password replaced, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}
