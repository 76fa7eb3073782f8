import type { FieldIssue } from './api-types';

/** What every error answer carries, plus the request it answered. */
export interface ErrorAnswer {
  status: number;
  /** The reason phrase (`Not Found`), as the API's `error` field says it. */
  error: string;
  message: string;
  details: FieldIssue[];
  method: string;
  path: string;
  /** From Retry-After, for 429 and 503. */
  retryAfterMs?: number;
}

/** The API answered with an error: `{statusCode, error, message, details: [{field, rule, message}]}`. */
export class AlmanacError extends Error {
  override name = 'AlmanacError';
  readonly status: number;
  readonly error: string;
  readonly details: FieldIssue[];
  readonly method: string;
  readonly path: string;
  /** How long the API asked to wait (Retry-After, on 429 and 503), if it said. */
  readonly retryAfterMs: number | undefined;

  constructor(answer: ErrorAnswer) {
    super(answer.message);
    this.retryAfterMs = answer.retryAfterMs;
    this.status = answer.status;
    this.error = answer.error;
    this.details = answer.details;
    this.method = answer.method;
    this.path = answer.path;
  }

  /** The fields the API named (`["runAt", "payload.amountCents"]`). */
  get fields(): string[] {
    return this.details.map((d) => d.field);
  }
}

/** 400: the request was refused; `details` names each field and rule. */
export class ValidationError extends AlmanacError {
  override name = 'ValidationError';
}

/** 401: no key, or one the API does not know (revoked keys too). */
export class UnauthorizedError extends AlmanacError {
  override name = 'UnauthorizedError';
}

/** 403: a suspended tenant (`details[0].rule` `suspended`), or the tenant's limit of schedules reached (`quota`). */
export class ForbiddenError extends AlmanacError {
  override name = 'ForbiddenError';
}

/** 404: no such job, schedule or operation for this tenant (another tenant's ids are 404 too). */
export class NotFoundError extends AlmanacError {
  override name = 'NotFoundError';
}

/** 409: the key names a different job, or the job's state does not allow the change. */
export class ConflictError extends AlmanacError {
  override name = 'ConflictError';
}

/**
 * 413: a payload or body over the API's size limit, or the tenant's stored bytes would pass its
 * quota (`details[0].rule` `stored_bytes_quota`): then not the payload's fault, and room comes back
 * as retention removes jobs.
 */
export class PayloadTooLargeError extends AlmanacError {
  override name = 'PayloadTooLargeError';
}

/** 429: over a rate or an open-operations limit; the client retried as long as it was allowed to. */
export class RateLimitedError extends AlmanacError {
  override name = 'RateLimitedError';
}

/** 503: the API could not do it now (its budget, the database or Redis); a replay with the same key is safe. */
export class UnavailableError extends AlmanacError {
  override name = 'UnavailableError';
}

/** No answer within the client's timeout (the caller's own signal aborts with its own reason). */
export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError';

  constructor(
    readonly method: string,
    readonly path: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`${method} ${path}: no answer within ${timeoutMs} ms`, options);
  }
}

/**
 * An id the API cannot have given (its ids are strings of digits; a JavaScript caller's safe
 * non-negative integer passes too), thrown before any request: sent, `''`, `'.'` or `'..'`
 * would reach another route (the list) and answer something else.
 */
export class InvalidIdError extends Error {
  override name = 'InvalidIdError';

  constructor(
    /** What the id names: `job`, `schedule`, `operation`. */
    readonly resource: string,
    readonly id: unknown,
  ) {
    super(`${resource} id must be a string of digits or a safe non-negative integer, got ${typeof id === 'string' ? JSON.stringify(id) : String(id)}`);
  }
}

/**
 * `/v1/<collection>/<id>` for an id the API gave; InvalidIdError for anything else. A safe
 * non-negative integer is taken as its decimal string: JavaScript callers passing `42` worked
 * before ids were checked, and keep working.
 */
export function idPath(collection: string, resource: string, id: unknown): string {
  if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) return `/v1/${collection}/${String(id)}`;
  if (typeof id !== 'string' || !/^[0-9]+$/.test(id)) throw new InvalidIdError(resource, id);
  return `/v1/${collection}/${id}`;
}

const BY_STATUS: Record<number, new (answer: ErrorAnswer) => AlmanacError> = {
  400: ValidationError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  429: RateLimitedError,
  503: UnavailableError,
};

/** The typed error for an answer's status (AlmanacError for the others). */
export function errorFor(answer: ErrorAnswer): AlmanacError {
  const Type = BY_STATUS[answer.status] ?? AlmanacError;
  return new Type(answer);
}
