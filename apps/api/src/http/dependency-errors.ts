import { WaitTimeoutError } from '@almanac/platform';

/**
 * Postgres SQLSTATEs that mean "not now" rather than "wrong": statement or lock timeout, too many
 * connections, the server shutting down or starting, and every connection exception (08xxx).
 */
const TRANSIENT_SQLSTATES = new Set(['57014', '55P03', '53300', '53400', '57P01', '57P02', '57P03', '40001', '40P01']);

/** Messages of the clients' own timeouts and disconnections (pg-pool, pg, ioredis). */
const TRANSIENT_MESSAGES = [
  'timeout exceeded when trying to connect', // pg-pool: no connection within ALMANAC_PG_ACQUIRE_MS
  'Connection terminated',
  'Command timed out', // ioredis commandTimeout
  'Connection is closed',
  'connect ECONNREFUSED',
  'read ECONNRESET',
];

/**
 * Whether an error came from Postgres or Redis being slow, saturated or away: the API answers
 * those with 503 and Retry-After instead of a 500 (issue 12).
 */
export function isTransientDependencyError(e: unknown): boolean {
  for (let err = e, depth = 0; err && depth < 4; depth++) {
    if (err instanceof WaitTimeoutError) return true;
    const { code, message, driverError, cause } = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown };
    if (typeof code === 'string' && (TRANSIENT_SQLSTATES.has(code) || code.startsWith('08') || code === 'ECONNREFUSED' || code === 'ECONNRESET')) return true;
    if (typeof message === 'string' && TRANSIENT_MESSAGES.some((m) => message.includes(m))) return true;
    err = driverError ?? cause;
  }
  return false;
}
