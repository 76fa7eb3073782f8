/** What a tenant is told about a failed attempt: a stable code, and a message meant for it. */
export interface PublicAttemptError {
  /**
   * `handler` (the reason the handler chose to give: retry, snooze or discard), `invalid_payload`,
   * `timeout`, `handler_error` (an exception: its text is the operator's), `set_aside`,
   * `shutdown`, `lost` (no outcome recorded: the worker stopped; or the run lost its lease),
   * `released` (given back at a worker's shutdown).
   */
  code: string;
  message: string;
}

/** Stored error text is bounded: a handler's exception may carry a whole response body. */
export const MAX_ERROR_LENGTH = 2000;

export function truncateError(message: string): string {
  return message.length <= MAX_ERROR_LENGTH ? message : `${message.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

/** The stored text of an attempt nobody finished (execution repository, overdue sweep). */
export const LOST_ATTEMPT_ERROR = 'no outcome recorded: the worker stopped or lost its lease';
/** The stored text of an attempt a worker released at shutdown. */
export const RELEASED_ATTEMPT_ERROR = 'worker shut down before the handler finished';

/** The stored text of a job a shared statement set aside (its claim, its promotion): the statement and the SQLSTATE Postgres gave. */
export function setAsideError(statement: 'claim' | 'promotion', sqlstate: string): string {
  return `SetAsideError: Postgres refused a value of this job in its ${statement} (SQLSTATE ${sqlstate})`;
}

/** Why the recurring sweep paused a schedule: what a tenant sees as the schedule's `lastError`. */
export function scheduleSetAsideError(sqlstate: string): string {
  return `SetAsideError: Postgres refused a value of this schedule's occurrences (SQLSTATE ${sqlstate}); the schedule is paused, and resuming it tries again`;
}

const EXCEPTION = /^([A-Za-z_$][\w$]*): ([\s\S]*)$/;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A thrown value that is not an Error, as text: String() itself throws for some (Object.create(null)), and anything for a revoked Proxy. */
export const describeThrown = (v: unknown): string => { try { return String(v); } catch { try { return Object.prototype.toString.call(v); } catch { return 'a value that cannot be read'; } } };
export const isError = (v: unknown): v is Error => { try { return v instanceof Error; } catch { return false; } }; // a revoked Proxy throws here too

/**
 * An exception as the worker stores it, `<name>: <message>`, the form publicAttemptError reads.
 * A name that is no identifier (`HTTP Error`, empty) is stored as `Error`: its text was taken
 * for a handler's own reason and shown to its tenant.
 */
export function exceptionText(error: unknown): string {
  if (!isError(error)) return `Error: ${describeThrown(error)}`;
  return `${typeof error.name === 'string' && IDENTIFIER.test(error.name) ? error.name : 'Error'}: ${error.message}`;
}
const HANDLER_ERROR_MESSAGE = "the handler failed; the operator's logs have the details under this job's id and attempt";

/**
 * Maps an attempt's stored error text to what its tenant may see. The worker stores a handler's
 * own reason as is and an exception as `<name>: <message>`; an exception's text may carry SQL,
 * host names or other tenants' data, so only the exceptions Almanac itself raises keep a message
 * (rewritten), and every other one becomes `handler_error` (the text is logged with the job's id
 * and attempt, and kept for the operator in job_attempts).
 */
export function publicAttemptError(stored: string | null | undefined): PublicAttemptError | null {
  if (stored === null || stored === undefined) return null;
  if (stored === LOST_ATTEMPT_ERROR) return { code: 'lost', message: stored };
  if (stored === RELEASED_ATTEMPT_ERROR) return { code: 'released', message: stored };
  const m = EXCEPTION.exec(stored);
  if (!m) return { code: 'handler', message: stored };
  const [, name, text] = m;
  switch (name) {
    case 'InvalidPayloadError':
      return { code: 'invalid_payload', message: text }; // the tenant's own fields, as the API names them
    case 'HandlerTimeoutError': {
      const ms = /(\d+) ms/.exec(text)?.[1];
      return { code: 'timeout', message: ms ? `the handler did not finish within ${ms} ms` : 'the handler did not finish in time' };
    }
    case 'SetAsideError':
      return { code: 'set_aside', message: `the job was set aside: ${text}; the operator's logs have the details under this job's id` };
    case 'LeaseLostError':
      return { code: 'lost', message: 'the attempt lost its lease before it finished: the job may have run again meanwhile' };
    case 'WorkerShutdownError':
      return { code: 'shutdown', message: 'the worker shut down during the run' };
    default:
      return { code: 'handler_error', message: HANDLER_ERROR_MESSAGE };
  }
}
