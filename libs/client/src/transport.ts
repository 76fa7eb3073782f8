import type { ErrorBody } from './api-types';
import { errorFor, RequestTimeoutError } from './errors';
import { retryAfterMs } from './retry-after';

/** What both clients take besides their credential. */
export interface ClientOptions {
  /** Where the API listens, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** Longest wait for one answer, per attempt (default 10 s; at most 2^31-1 ms, ~24.8 days, as every timer). */
  timeoutMs?: number;
  /** Retries of 429 (and 503, where a replay is safe) after Retry-After. */
  retry?: {
    /** Attempts in all, the first included (default 3; 1 turns retries off). */
    attempts?: number;
    /** Longest wait before one retry (default 30 s); a longer Retry-After is thrown to the caller instead. A wait is at most 2^31-1 ms (~24.8 days). */
    maxDelayMs?: number;
  };
  /** Another fetch (tests, older runtimes); default the global one. */
  fetch?: typeof fetch;
  /** How a retry waits (tests pass one that records the delay); default a timer that the call's signal cancels. */
  delay?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Per call: the caller's signal aborts the request and any wait before a retry. */
export interface CallOptions {
  signal?: AbortSignal;
}

interface ApiRequest extends CallOptions {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | Date | undefined>;
  body?: unknown;
  /**
   * Whether sending it twice does what sending it once does (a job create with its key, a
   * cancel, a GET). Only such requests are retried after a 503, which may come after the work
   * was done; a 429 is refused before any work, so every request is retried after one.
   */
  idempotent: boolean;
  /** Added to the per-attempt timeout: a request the server holds on purpose (a job's waitSeconds). */
  holdMs?: number;
}

interface ApiAnswer<T> {
  status: number;
  body: T;
  /** An earlier attempt of this call ended in a 503, which may come after the work was done. */
  resentAfter503: boolean;
}

/**
 * Whether a create's call made what it answers: a 201 did; a 200 answered what was there before,
 * unless an earlier attempt of the call ended in a 503 and was resent: then that attempt may have
 * made it, and the answer cannot tell (null).
 */
export function createdByCall(answer: ApiAnswer<unknown>): boolean | null {
  if (answer.status === 201) return true;
  return answer.resentAfter503 ? null : false;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_ATTEMPTS = 3;
const DEFAULT_MAX_DELAY_MS = 30_000;
/** When a 429 or 503 comes without Retry-After: 1 s, 2 s, 4 s, … */
const FALLBACK_DELAY_MS = 1000;
/**
 * The longest time a timer takes (2^31-1 ms, ~24.8 days): Node fires a longer setTimeout after
 * ~1 ms and AbortSignal.timeout throws a RangeError for it, for Infinity and for a fraction.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a timer takes it: a whole number from 1 to MAX_TIMER_MS (NaN as 1). */
function timerMs(ms: number): number {
  if (Number.isNaN(ms)) return 1;
  return Math.min(MAX_TIMER_MS, Math.max(1, Math.round(ms)));
}

/** HTTP for one credential: JSON in and out, the timeout, typed errors and retries. */
export class Transport {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  private readonly delay: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(
    private readonly options: ClientOptions,
    private readonly token: string,
  ) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    // Called as a plain function: a browser's fetch refuses to run as another object's method.
    const custom = options.fetch;
    this.fetch = custom ? (input, init) => custom(input, init) : (input, init) => globalThis.fetch(input, init);
    this.delay = options.delay ?? abortableDelay;
  }

  async request<T>(req: ApiRequest): Promise<ApiAnswer<T>> {
    const attempts = Math.max(1, this.options.retry?.attempts ?? DEFAULT_ATTEMPTS);
    let resentAfter503 = false;
    for (let attempt = 1; ; attempt++) {
      const answer = await this.send(req);
      if (answer.status < 400) return { status: answer.status, body: parse(answer.text, req) as T, resentAfter503 };
      const wait = attempt < attempts ? this.retryDelay(answer, req.idempotent, attempt) : undefined;
      if (wait === undefined) {
        throw errorFor({ ...errorBody(answer.status, answer.text), method: req.method, path: req.path, retryAfterMs: answer.retryAfterMs });
      }
      await this.delay(timerMs(wait), req.signal);
      resentAfter503 ||= answer.status === 503;
    }
  }

  /** How long to wait before retrying, or undefined when this answer is final. */
  private retryDelay(answer: { status: number; retryAfterMs?: number }, idempotent: boolean, attempt: number): number | undefined {
    if (answer.status !== 429 && !(answer.status === 503 && idempotent)) return undefined;
    const wait = answer.retryAfterMs ?? FALLBACK_DELAY_MS * 2 ** (attempt - 1);
    return wait <= (this.options.retry?.maxDelayMs ?? DEFAULT_MAX_DELAY_MS) ? wait : undefined;
  }

  /** One attempt: the answer's status, Retry-After and text, read within the timeout. */
  private async send(req: ApiRequest): Promise<{ status: number; retryAfterMs?: number; text: string }> {
    const timeoutMs = timerMs((this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS) + (req.holdMs ?? 0));
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}`, Accept: 'application/json' };
    if (req.body !== undefined) headers['Content-Type'] = 'application/json';
    try {
      const res = await this.fetch(this.url(req), {
        method: req.method,
        headers,
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal,
      });
      const text = await res.text();
      return { status: res.status, retryAfterMs: retryAfterMs(res.headers.get('retry-after'), Date.now()), text };
    } catch (err) {
      if (timeout.aborted && !req.signal?.aborted) throw new RequestTimeoutError(req.method, req.path, timeoutMs, { cause: err });
      throw err;
    }
  }

  private url(req: ApiRequest): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) params.set(k, v instanceof Date ? v.toISOString() : String(v));
    }
    const query = params.toString();
    return `${this.baseUrl}${req.path}${query ? `?${query}` : ''}`;
  }
}

function parse(text: string, req: ApiRequest): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${req.method} ${req.path}: the answer is not JSON: ${text.slice(0, 200)}`);
  }
}

/** The API's error body; anything else (a proxy's HTML page) as its status and first bytes. */
function errorBody(status: number, text: string): Omit<ErrorBody, 'statusCode'> & { status: number } {
  try {
    const body = JSON.parse(text) as Partial<ErrorBody>;
    if (typeof body.message === 'string') {
      return { status, error: body.error ?? '', message: body.message, details: Array.isArray(body.details) ? body.details : [] };
    }
  } catch {
    // not JSON: described below
  }
  return { status, error: '', message: `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`, details: [] };
}

/** Waits `ms`, or less when `signal` aborts (then throws its reason, as fetch does). */
async function abortableDelay(ms: number, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
  signal?.throwIfAborted();
}
