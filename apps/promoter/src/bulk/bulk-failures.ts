import { isValueError } from '@almanac/platform';

/** A bulk operation's step: matching its filter, or applying one of its chunks. */
export type BulkStep = 'match' | 'apply';

const STATEMENT_TIMEOUT = '57014';

/**
 * Whether a step's failure recurs however often the step is tried, so that a few in a row fail
 * the operation: Postgres refused a value (class 22, 23) or the statement itself (42: undefined
 * or not allowed; 54: over a program limit), or a match took longer than the statement timeout
 * (nothing is applied yet, and the same filter reads the same rows again). Anything else (a lock
 * timeout, a deadlock, a chunk's statement timeout, which mostly waited on locks) may pass: the
 * operation backs off and goes on where it stopped, since failing a chunk leaves it half done.
 */
export function failureLasts(err: unknown, step: BulkStep): boolean {
  const code = sqlState(err);
  if (code === STATEMENT_TIMEOUT) return step === 'match';
  return isValueError(err) || code?.startsWith('42') === true || code?.startsWith('54') === true;
}

/** The reason an operation failed with, `times` lasting failures in a row of `step`. */
export function failureReason(err: unknown, step: BulkStep, times: number): string {
  if (sqlState(err) === STATEMENT_TIMEOUT) {
    return `its match took longer than the statement timeout ${times} times in a row: narrow the filter, for example with runAtFrom and runAtTo`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return `its ${step} failed ${times} times in a row: ${message.slice(0, 500)}`;
}

/** The SQLSTATE of a Postgres error, wrapped or not (typeorm's driverError, a cause). */
function sqlState(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 4; depth++) {
    const { code, driverError, cause } = e as { code?: unknown; driverError?: unknown; cause?: unknown };
    if (typeof code === 'string') return code;
    e = driverError ?? cause;
  }
  return undefined;
}
