import { ConfigError, type Env, readSetting } from '@almanac/config';

/** Validated database settings. Read once at boot; a bad value stops the process. */
export interface DatabaseConfig {
  url: string;
  poolSize: number;
  /**
   * Bounds on every wait on Postgres, in ms (absent or 0 = none): one statement, one lock, a
   * transaction left idle, and getting a pooled connection. The app roles set them all
   * (databaseConfigFromEnv); migrations and benchmarks, whose statements may rightly be long,
   * do not (migrations bound their lock waits apart: runMigrations).
   */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  idleInTransactionTimeoutMs?: number;
  acquireTimeoutMs?: number;
}


/** The database settings as libs/config/src/settings/core.ts declares them. */
export function databaseConfigFromEnv(env: Env): DatabaseConfig {
  const url = readSetting(env, 'DATABASE_URL');
  if (new URL(url).pathname.length < 2) throw new ConfigError('DATABASE_URL must name a database');
  return {
    url,
    poolSize: readSetting(env, 'ALMANAC_DB_POOL_SIZE'),
    statementTimeoutMs: readSetting(env, 'ALMANAC_PG_STATEMENT_TIMEOUT_MS'),
    lockTimeoutMs: readSetting(env, 'ALMANAC_PG_LOCK_TIMEOUT_MS'),
    idleInTransactionTimeoutMs: readSetting(env, 'ALMANAC_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS'),
    acquireTimeoutMs: readSetting(env, 'ALMANAC_PG_ACQUIRE_TIMEOUT_MS'),
  };
}

/**
 * Query parameters that carry a secret. pg-connection-string reads every one as a connection
 * setting: `?password=` even wins over the user:password@ form, and `sslpassword` unlocks the key.
 */
const SECRET_QUERY_PARAM = /password|secret|token|sslkey/i;

/** The URL with any password (user:password@ or a secret query parameter) replaced, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const name of [...u.searchParams.keys()]) {
      if (SECRET_QUERY_PARAM.test(name)) u.searchParams.set(name, '***');
    }
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}

/** The password a client connects with: `?password=` first (as pg-connection-string reads it), else user:password@. */
export function passwordOfUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    const password = u.searchParams.get('password') || decodeURIComponent(u.password);
    return password === '' ? undefined : password;
  } catch {
    return undefined; // a malformed URL is refused by its own check
  }
}
