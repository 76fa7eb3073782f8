import { isValueError, publicCause } from '@almanac/platform';

/** A bulk operation's step: matching its filter, or applying one of its chunks. */
export type BulkStep = 'match' | 'apply';

/** query_canceled: a statement timeout, but also an operator's pg_cancel_backend. */
const QUERY_CANCELED = '57014';
/** Postgres' message for the one cancel that says the statement is slow (its lc_messages in English). */
const STATEMENT_TIMEOUT = 'canceling statement due to statement timeout';

/**
 * Whether a step's failure recurs however often the step is tried, so that a few in a row fail
 * the operation: Postgres refused a value (class 22, 23) or the statement itself (42: undefined
 * or not allowed; 54: over a program limit), or a match took longer than the statement timeout
 * (nothing is applied yet, and the same filter reads the same rows again; its lock waits end
 * sooner, as lock timeouts: BOUND_MATCH_LOCK_WAITS_SQL). Anything else (a lock timeout, a
 * deadlock, an operator's cancel, a chunk's statement timeout, which mostly waited on locks) may
 * pass: the operation backs off and goes on where it stopped, since failing a chunk leaves it
 * half done.
 */
export function failureLasts(err: unknown, step: BulkStep): boolean {
  const code = pgError(err)?.code;
  if (code === QUERY_CANCELED) return step === 'match' && timedOut(err);
  return isValueError(err) || code?.startsWith('42') === true || code?.startsWith('54') === true;
}

/**
 * The reason an operation failed with, `times` lasting failures in a row of `step`: what its
 * tenant reads at GET /v1/operations/:id, so the class of the cause (publicCause), never
 * Postgres' message (host names, relations, an operator's trigger text). The sweep logs that
 * with the operation's id at each failure.
 */
export function failureReason(err: unknown, step: BulkStep, times: number): string {
  if (timedOut(err)) {
    return `its match took longer than the statement timeout ${times} times in a row: narrow the filter, for example with runAtFrom and runAtTo`;
  }
  return `its ${step} failed ${times} times in a row: ${publicCause(err)}; the operator's logs have the details under this operation's id`;
}

/** Whether Postgres cancelled the statement for its statement timeout (not an operator's cancel). */
function timedOut(err: unknown): boolean {
  const e = pgError(err);
  return e?.code === QUERY_CANCELED && e.message.includes(STATEMENT_TIMEOUT);
}

/** The SQLSTATE and message of a Postgres error, wrapped or not (typeorm's driverError, a cause). */
function pgError(err: unknown): { code: string; message: string } | undefined {
  for (let e = err, depth = 0; e && depth < 4; depth++) {
    const { code, message, driverError, cause } = e as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown };
    if (typeof code === 'string') return { code, message: typeof message === 'string' ? message : '' };
    e = driverError ?? cause;
  }
  return undefined;
}
