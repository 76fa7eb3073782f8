import { WaitTimeoutError } from '../time/within';

/** Postgres SQLSTATEs that mean the server is away or full: too many connections, shutting down or starting. */
const AWAY_SQLSTATES = new Set(['53300', '53400', '57P01', '57P02', '57P03']);
/**
 * And those that mean "not now" for one statement: a statement or lock timeout, a serialization
 * failure or deadlock.
 */
const STATEMENT_SQLSTATES = new Set(['57014', '55P03', '40001', '40P01']);

/** Messages of the clients' own timeouts and disconnections (pg-pool, pg, ioredis). */
const TRANSIENT_MESSAGES = [
  'timeout exceeded when trying to connect', // pg-pool: no connection within ALMANAC_PG_ACQUIRE_TIMEOUT_MS
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
  return classify(e, true);
}

/**
 * Whether Postgres or Redis is away (no connection, a restart, a client timeout), as opposed to
 * one statement failing: a sweep stops its run on it, and sets aside the item of anything else.
 */
export function isDependencyAway(e: unknown): boolean {
  return classify(e, false);
}

function classify(e: unknown, statementsToo: boolean): boolean {
  for (let err = e, depth = 0; err && depth < 4; depth++) {
    if (err instanceof WaitTimeoutError) return true;
    const { code, message, driverError, cause } = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown };
    if (typeof code === 'string') {
      if (AWAY_SQLSTATES.has(code) || code.startsWith('08') || code === 'ECONNREFUSED' || code === 'ECONNRESET') return true;
      if (statementsToo && STATEMENT_SQLSTATES.has(code)) return true;
    }
    if (typeof message === 'string' && TRANSIENT_MESSAGES.some((m) => message.includes(m))) return true;
    err = driverError ?? cause;
  }
  return false;
}
