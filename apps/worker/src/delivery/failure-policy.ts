import { decideAfterFailure, RetryPolicy, TierHorizons } from '@almanac/domain';

/**
 * Where a job goes after an attempt that did not complete: the domain's arithmetic (equal
 * jitter backoff, `dead` once attempts are exhausted), mapped onto row states. A retry goes back
 * through the tiers like any other job: within the hot horizon → `queued` (and enqueued),
 * later → a cold `scheduled` row with no Redis entry at all.
 */
export type FailureDecision =
  | { next: 'dead' }
  | { next: 'queued' | 'scheduled'; runAt: Date };

export function failureDecision(input: {
  attempt: number;
  maxAttempts: number;
  /** The handler's own delay (retry({delayMs}), Retry-After); otherwise backoff. */
  delayMs?: number;
  now: Date;
  horizons: TierHorizons;
  policy: RetryPolicy;
}): FailureDecision {
  const d = decideAfterFailure({
    attempt: input.attempt,
    maxAttempts: input.maxAttempts,
    now: input.now,
    policy: input.policy,
    horizons: input.horizons,
    retryAfterMs: input.delayMs,
  });
  if (d.kind === 'dead') return { next: 'dead' };
  return { next: d.tier === 'cold' ? 'scheduled' : 'queued', runAt: d.runAt };
}
