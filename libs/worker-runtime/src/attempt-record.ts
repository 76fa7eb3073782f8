import { decideAfterFailure, decideAfterSnooze, entryState, exceptionText, truncateError, type SnoozeDecision, type HandlerOutcome, type RetryPolicy, type TierHorizons } from '@almanac/domain';
import type { CompletionRecord, RunnableJob } from '@almanac/persistence';
import { InvalidPayloadError, PayloadForAnotherDefinitionError } from '@almanac/kinds';

export interface AttemptContext {
  startedAt: Date;
  now: Date;
  workerId: string;
  horizons: TierHorizons;
  retryPolicy: RetryPolicy;
}

/**
 * How one attempt ended, as the row and its history record it: the handler's outcome, or its
 * exception (a retry with backoff; an invalid payload is discarded, or snoozed while another
 * definition of its kind is in use). A `snoozed` attempt adds one to max_attempts (COMPLETE_ATTEMPTS).
 */
export function attemptRecord(row: RunnableJob, outcome: HandlerOutcome | undefined, error: unknown, c: AttemptContext): CompletionRecord {
  if (error instanceof PayloadForAnotherDefinitionError) return attemptRecord(row, error.outcome, undefined, c);
  if (outcome?.type === 'completed') {
    // Written out, not spread: this one runs for every successful job.
    return {
      id: row.id, attempt: row.attempt, tenantId: row.tenantId, startedAt: c.startedAt, finishedAt: c.now, workerId: c.workerId,
      next: 'succeeded', outcome: 'succeeded', result: outcome.result, error: null,
    };
  }
  const base = { id: row.id, attempt: row.attempt, tenantId: row.tenantId, startedAt: c.startedAt, finishedAt: c.now, workerId: c.workerId };
  const input = { attempt: row.attempt, maxAttempts: row.maxAttempts, now: c.now, horizons: c.horizons, policy: c.retryPolicy };
  if (outcome === undefined) {
    const message = truncateError(exceptionText(error));
    if (error instanceof InvalidPayloadError) return { ...base, next: 'dead', outcome: 'discarded', error: message };
    return { ...base, ...nextState(decideAfterFailure(input)), outcome: 'failed', error: message };
  }
  switch (outcome.type) {
    case 'retry':
      return { ...base, ...nextState(decideAfterFailure({ ...input, retryAfterMs: outcome.delayMs })), outcome: 'failed', result: outcome.result, error: truncateError(outcome.reason ?? 'retry requested') };
    case 'snooze': {
      const d = decideAfterSnooze({ ...input, delayMs: outcome.delayMs });
      return { ...base, ...nextState(d), outcome: d.kind === 'snooze' ? 'snoozed' : 'failed', error: truncateError(outcome.reason ?? 'snoozed') };
    }
    case 'discard':
      return { ...base, next: 'dead', outcome: 'discarded', result: outcome.result, error: truncateError(outcome.reason) };
  }
}

/** A retry goes back through the tiers like a new job: queued within the hot horizon, else a cold scheduled row with no Redis entry. */
function nextState(d: SnoozeDecision): { next: 'dead' } | { next: 'queued' | 'scheduled'; runAt: Date } {
  return d.kind === 'dead' ? { next: 'dead' } : { next: entryState(d.tier), runAt: d.runAt };
}
