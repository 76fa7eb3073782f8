import { decideAfterFailure, entryState, type HandlerOutcome, type RetryPolicy, type TierHorizons } from '@almanac/domain';
import type { CompletionRecord, RunnableJob } from '@almanac/persistence';
import { InvalidPayloadError } from '@almanac/kinds';

/** Stored error text is bounded: a handler's exception may carry a whole response body. */
export const MAX_ERROR_LENGTH = 2000;

export function truncateError(message: string): string {
  return message.length <= MAX_ERROR_LENGTH ? message : `${message.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

export interface AttemptContext {
  startedAt: Date;
  now: Date;
  workerId: string;
  horizons: TierHorizons;
  retryPolicy: RetryPolicy;
}

/**
 * How one attempt ended, as the row and its history record it: the handler's outcome, or its
 * exception (a retry with backoff; an invalid payload is discarded).
 */
export function attemptRecord(row: RunnableJob, outcome: HandlerOutcome | undefined, error: unknown, c: AttemptContext): CompletionRecord {
  const base = { id: row.id, attempt: row.attempt, tenantId: row.tenantId, startedAt: c.startedAt, finishedAt: c.now, workerId: c.workerId };
  // A retry goes back through the tiers like a new job: queued within the hot horizon, else a
  // cold scheduled row with no Redis entry.
  const fail = (retryAfterMs: number | undefined) => {
    const d = decideAfterFailure({ attempt: row.attempt, maxAttempts: row.maxAttempts, retryAfterMs, now: c.now, horizons: c.horizons, policy: c.retryPolicy });
    return d.kind === 'dead' ? { next: 'dead' as const } : { next: entryState(d.tier), runAt: d.runAt };
  };
  if (outcome === undefined) {
    const message = truncateError(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    if (error instanceof InvalidPayloadError) return { ...base, next: 'dead', outcome: 'discarded', error: message };
    return { ...base, ...fail(undefined), outcome: 'failed', error: message };
  }
  switch (outcome.type) {
    case 'completed':
      // Written out, not spread: this one runs for every successful job.
      return {
        id: row.id, attempt: row.attempt, tenantId: row.tenantId, startedAt: c.startedAt, finishedAt: c.now, workerId: c.workerId,
        next: 'succeeded', outcome: 'succeeded', result: outcome.result, error: null,
      };
    case 'retry':
      return { ...base, ...fail(outcome.delayMs), outcome: 'failed', result: outcome.result, error: truncateError(outcome.reason ?? 'retry requested') };
    case 'discard':
      return { ...base, next: 'dead', outcome: 'discarded', result: outcome.result, error: truncateError(outcome.reason) };
  }
}
