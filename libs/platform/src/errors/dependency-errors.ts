import { WaitTimeoutError } from '../time/within';

/**
 * Postgres SQLSTATEs that mean the server is away or out of something: shutting down or
 * starting, read-only after a failover, and the classes of insufficient resources (53: disk,
 * memory, connections) and system errors (58).
 */
const AWAY_SQLSTATES = new Set(['57P01', '57P02', '57P03', '25006']);
const AWAY_CLASSES = ['08', '53', '58'];
/** Network errors of the clients' own sockets and name lookups. */
const AWAY_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/**
 * And those that mean "not now" for one statement: a statement or lock timeout, a serialization
 * failure or deadlock; each with the words a tenant is told it by (publicCause).
 */
const STATEMENT_SQLSTATES = new Map([
  ['57014', 'a statement was cancelled'], // its statement timeout, or an operator's pg_cancel_backend
  ['55P03', 'a lock wait ran out'],
  ['40001', 'a serialization failure'],
  ['40P01', 'a deadlock'],
]);
/** Other classes of SQLSTATE a tenant is told by name: the statement refused (42), a program limit (54). */
const STATEMENT_CLASSES = new Map([
  ['42', 'a statement Postgres refused'],
  ['54', 'a statement over a Postgres limit'],
]);

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

/** An error and those it wraps (TypeORM's driverError, a cause), outermost first, at most four deep. */
function* causes(err: unknown): Generator<{ code?: unknown; message?: unknown; where?: unknown }> {
  for (let e = err, depth = 0; e && depth < 4; depth++) {
    yield e;
    const { driverError, cause } = e as { driverError?: unknown; cause?: unknown };
    e = driverError ?? cause;
  }
}

function classify(e: unknown, statementsToo: boolean): boolean {
  for (const err of causes(e)) {
    if (err instanceof WaitTimeoutError) return true;
    const { code, message } = err;
    if (typeof code === 'string') {
      if (AWAY_SQLSTATES.has(code) || AWAY_CLASSES.includes(code.slice(0, 2)) || AWAY_ERRNOS.has(code)) return true;
      if (statementsToo && STATEMENT_SQLSTATES.has(code)) return true;
    }
    if (typeof message === 'string' && TRANSIENT_MESSAGES.some((m) => message.includes(m))) return true;
  }
  return false;
}

/**
 * Whether Postgres refused a value of the statement's input: SQLSTATE class 22 (data exception:
 * a NUL in text, an unsupported escape in JSON, a number out of range) or 23 (integrity
 * constraint). The same statement with the same values fails again however often it is sent.
 */
export function isValueError(err: unknown): boolean {
  for (const { code } of causes(err)) if (typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'))) return true;
  return false;
}

/** The Postgres SQLSTATE of an error, or of the error it wraps (TypeORM's driverError). */
export function sqlStateOf(err: unknown): string | undefined {
  for (const { code } of causes(err)) if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && /[0-9]/.test(code)) return code; // a SQLSTATE has digits; Node's EPIPE, EPERM do not
  return undefined;
}

/**
 * What a tenant may be told of a failure in Postgres or Redis: its class and SQLSTATE, never its
 * message, which may name internal hosts and ports, relations and constraints, or carry a
 * trigger's text. The operator's logs have the message.
 */
export function publicCause(err: unknown): string {
  const code = sqlStateOf(err);
  const tag = code ? ` (${code})` : '';
  if (isDependencyAway(err)) return `the database or queue was unavailable${tag}`;
  if (isValueError(err)) return `a value Postgres refused${tag}`;
  if (code) return `${STATEMENT_SQLSTATES.get(code) ?? STATEMENT_CLASSES.get(code.slice(0, 2)) ?? 'a Postgres error'}${tag}`;
  return 'an internal error';
}

/**
 * A lock timeout (55P03) met waiting on rows (a key another transaction is inserting, a row it
 * writes or deletes), not on a whole table: Postgres gives a wait on rows a context naming the
 * tuple by its place ("while inserting index tuple (0,2) in relation …", in the server's
 * language), and a table's lock none.
 */
export function isRowLockTimeout(err: unknown): boolean {
  if (sqlStateOf(err) !== '55P03') return false;
  for (const { where } of causes(err)) if (typeof where === 'string' && /\(\d+,\s*\d+\)/.test(where)) return true;
  return false;
}
