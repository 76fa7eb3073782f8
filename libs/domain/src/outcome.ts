/** JSON a handler may return as its result. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * What a handler returns. Expected endings are values; a thrown exception means "unexpected":
 * the worker treats it like `retry` without a delay (backoff applies).
 * - `completed`: done; `result` is stored with the job.
 * - `retry`: try again after `delayMs`, or after the backoff when omitted; counts as an attempt.
 * - `snooze`: not now, come back after `delayMs`; spends no attempt (the job's `maxAttempts` grows
 *   by one, as Oban's snooze does), for a run that found its work held elsewhere (a busy effect
 *   record). A job that has used MAX_LIFETIME_ATTEMPTS snoozes as a retry.
 * - `discard`: give up for good (the job goes to `dead` whatever attempts are left).
 */
export type HandlerOutcome =
  | { readonly type: 'completed'; readonly result?: JsonValue }
  | { readonly type: 'retry'; readonly delayMs?: number; readonly reason?: string; readonly result?: JsonValue }
  | { readonly type: 'snooze'; readonly delayMs: number; readonly reason?: string }
  | { readonly type: 'discard'; readonly reason: string; readonly result?: JsonValue };

export function completed(result?: JsonValue): HandlerOutcome {
  return result === undefined ? { type: 'completed' } : { type: 'completed', result };
}

export function retry(opts: { delayMs?: number; reason?: string; result?: JsonValue } = {}): HandlerOutcome {
  return { type: 'retry', ...opts };
}

export function snooze(opts: { delayMs: number; reason?: string }): HandlerOutcome {
  return { type: 'snooze', ...opts };
}

export function discard(reason: string, result?: JsonValue): HandlerOutcome {
  return result === undefined ? { type: 'discard', reason } : { type: 'discard', reason, result };
}

/** For values coming back from handler code that TypeScript cannot vouch for. */
export function isHandlerOutcome(value: unknown): value is HandlerOutcome {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  switch (v.type) {
    case 'completed':
      return true;
    case 'retry':
      return (v.delayMs === undefined || typeof v.delayMs === 'number') && (v.reason === undefined || typeof v.reason === 'string');
    case 'snooze':
      return Number.isFinite(v.delayMs) && (v.reason === undefined || typeof v.reason === 'string');
    case 'discard':
      return typeof v.reason === 'string';
    default:
      return false;
  }
}

/**
 * What a handler returned, as an outcome: anything else (a JS handler's `{ type: 'done' }`) is
 * refused here with a TypeError that says what it was, so its run fails as a thrown error does;
 * unrecognised, it broke the group commit of every job batched with it.
 */
export function handlerOutcome(value: unknown): HandlerOutcome {
  if (isHandlerOutcome(value)) return value;
  throw new TypeError(`the handler returned ${describeOutcome(value)}, not an outcome: use completed(), retry(), snooze() or discard()`);
}

function describeOutcome(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value);
  const type = (value as { type?: unknown }).type;
  return ['completed', 'retry', 'snooze', 'discard'].includes(type as string) ? `a ${String(type)} outcome with invalid fields` : `an object with type ${String(JSON.stringify(type))}`;
}
