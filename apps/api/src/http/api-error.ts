import { STATUS_CODES } from 'node:http';

/** One reason a request was refused: which field, which rule, in words. */
export interface FieldIssue {
  field: string;
  rule: string;
  message: string;
}

/** The error body every /v1 route answers with. */
export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  details: FieldIssue[];
}

/** An expected refusal; the exception filter turns it into an ErrorBody. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly details: FieldIssue[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get body(): ErrorBody {
    return { statusCode: this.status, error: reasonPhrase(this.status), message: this.message, details: this.details };
  }
}

/** Node's own table of reason phrases (`Payload Too Large`, `Unsupported Media Type`, …). */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

/** 400 for validation issues, 413 when the only problem is size (issues with rule `too_large`). */
export function invalid(issues: FieldIssue[]): ApiError {
  const status = issues.length > 0 && issues.every((i) => i.rule === 'too_large') ? 413 : 400;
  const message = issues.map((i) => i.message).join('; ');
  return new ApiError(status, message, issues);
}

export function notFound(what: string): ApiError {
  return new ApiError(404, `${what} not found`);
}

export function conflict(message: string, field: string, rule: string): ApiError {
  return new ApiError(409, message, [{ field, rule, message }]);
}

/**
 * 503 with Retry-After: the API cannot do this now (its commit queue is full, the database or
 * Redis does not answer in time) but nothing is wrong with the request. Sent again with the same
 * job key, it is answered 201 or, if the first attempt committed after all, 200.
 */
export function unavailable(message: string, retryAfterSeconds = 1): ApiError {
  return new ApiError(503, message, [], { 'Retry-After': String(retryAfterSeconds) });
}

/**
 * A limit reached (429, or 503 for the server's own budget): Retry-After in whole seconds, at
 * least 1, and the limit named in `details` and in the message, which ends "retry in Ns".
 */
export function overLimit(status: 429 | 503, what: string, field: string, rule: string, retryAfterMs: number): ApiError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const message = `${what}; retry in ${seconds}s`;
  return new ApiError(status, message, [{ field, rule, message }], { 'Retry-After': String(seconds) });
}
