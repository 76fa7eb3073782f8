/** Validated database settings. Read once at boot; a bad value stops the process. */
export interface DatabaseConfig {
  url: string;
  poolSize: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
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
  return { url, poolSize };
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
