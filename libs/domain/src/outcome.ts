import { decideAfterFailure, type FailureInput } from './retry';
import type { Tier } from './tier';

/** JSON a handler may return as its result. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * What a handler returns. Expected endings are values; a thrown exception means "unexpected":
 * the worker treats it like `retry` without a delay (backoff applies).
 * - `completed`: done; `result` is stored with the job.
 * - `retry`: try again after `delayMs`, or after the backoff when omitted; counts as an attempt.
 * - `discard`: give up for good (the job goes to `dead` whatever attempts are left).
 */
export type HandlerOutcome =
  | { readonly type: 'completed'; readonly result?: JsonValue }
  | { readonly type: 'retry'; readonly delayMs?: number; readonly reason?: string; readonly result?: JsonValue }
  | { readonly type: 'discard'; readonly reason: string; readonly result?: JsonValue };

export function completed(result?: JsonValue): HandlerOutcome {
  return result === undefined ? { type: 'completed' } : { type: 'completed', result };
}

export function retry(opts: { delayMs?: number; reason?: string; result?: JsonValue } = {}): HandlerOutcome {
  return { type: 'retry', ...opts };
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
    case 'discard':
      return typeof v.reason === 'string';
    default:
      return false;
  }
}

/** Where the job goes after an attempt ended with `outcome`. */
export type OutcomeDecision =
  | { readonly next: 'succeeded'; readonly result?: JsonValue }
  | { readonly next: 'retry'; readonly runAt: Date; readonly delayMs: number; readonly tier: Tier; readonly reason?: string }
  | { readonly next: 'dead'; readonly reason: string };

export function decideAfterOutcome(outcome: HandlerOutcome, ctx: Omit<FailureInput, 'retryAfterMs'>): OutcomeDecision {
  switch (outcome.type) {
    case 'completed':
      return outcome.result === undefined ? { next: 'succeeded' } : { next: 'succeeded', result: outcome.result };
    case 'discard':
      return { next: 'dead', reason: outcome.reason };
    case 'retry': {
      const decision = decideAfterFailure({ ...ctx, retryAfterMs: outcome.delayMs });
      if (decision.kind === 'dead') return { next: 'dead', reason: `attempts exhausted (${ctx.attempt}/${ctx.maxAttempts})` };
      const { runAt, delayMs, tier } = decision;
      return outcome.reason === undefined ? { next: 'retry', runAt, delayMs, tier } : { next: 'retry', runAt, delayMs, tier, reason: outcome.reason };
    }
  }
}
