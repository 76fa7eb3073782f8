import { InvalidDomainConfigError } from './errors';
import { DEFAULT_HORIZONS, tierFor, type Tier, type TierHorizons } from './tier';

/**
 * Exponential backoff: attempt n (1-based, the attempt that just failed) has the ceiling
 * `min(maxMs, baseMs · factor^(n-1))`.
 */
export interface RetryPolicy {
  readonly baseMs: number;
  readonly factor: number;
  readonly maxMs: number;
}

/** 1 s, 2 s, 4 s, … capped at 1 h (reached on attempt 13). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({ baseMs: 1_000, factor: 2, maxMs: 3_600_000 });

export function validateRetryPolicy(policy: RetryPolicy): RetryPolicy {
  if (!Number.isSafeInteger(policy.baseMs) || policy.baseMs <= 0) {
    throw new InvalidDomainConfigError('baseMs', 'positive_integer', `baseMs must be a positive whole number of milliseconds, got ${policy.baseMs}`);
  }
  if (!Number.isFinite(policy.factor) || policy.factor < 1) {
    throw new InvalidDomainConfigError('factor', 'at_least_one', `factor must be a finite number >= 1, got ${policy.factor}`);
  }
  if (!Number.isSafeInteger(policy.maxMs) || policy.maxMs < policy.baseMs) {
    throw new InvalidDomainConfigError('maxMs', 'at_least_base', `maxMs must be a whole number of milliseconds >= baseMs (${policy.baseMs}), got ${policy.maxMs}`);
  }
  return policy;
}

/**
 * The delay before retrying after failed attempt `attempt` (1-based), with EQUAL jitter:
 * a uniformly random delay in [ceiling/2, ceiling), ceiling as in RetryPolicy.
 *
 * Equal rather than full jitter (uniform in [0, ceiling)) because full jitter can retry a
 * failing downstream almost at once, however many attempts have failed; equal jitter always
 * backs off at least half the ceiling and still spreads a burst of failures over the other half.
 * `random` must return [0, 1) like Math.random; inject it to make tests exact.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY, random: () => number = Math.random): number {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
  // factor^(n-1) overflows to Infinity for large n; min() then yields the cap, never NaN.
  const ceiling = Math.min(policy.maxMs, policy.baseMs * policy.factor ** (attempt - 1));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.min(Math.floor(ceiling / 2 + (r * ceiling) / 2), policy.maxMs);
}

/**
 * A job's attempts over its whole life, retries of a dead job included: a retry that would pass
 * it is refused. The counter is a smallint (32,767) that every claim adds to, and one row whose
 * claim overflowed it failed the claim of every row batched with it, of any tenant. The headroom
 * is for attempts released at a worker's shutdown, which count without ending the job.
 */
export const MAX_LIFETIME_ATTEMPTS = 10_000;

/** Whether a retry of a dead job that has used `attempts` may grant `extra` more (MAX_LIFETIME_ATTEMPTS). */
export function retryWithinLifetime(attempts: number, extra: number): boolean {
  return attempts + extra <= MAX_LIFETIME_ATTEMPTS;
}

/** The latest run time a job may have (the API refuses later ones; Postgres and JS dates reach it). */
export const LATEST_RUN_AT_MS = Date.UTC(9999, 11, 31, 23, 59, 59);

export type FailureDecision =
  | { readonly kind: 'retry'; readonly runAt: Date; readonly delayMs: number; readonly tier: Tier }
  | { readonly kind: 'dead' };

export interface FailureInput {
  /** The attempt that just failed, 1-based (the job's attempts counter after this attempt). */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly now: Date;
  readonly policy?: RetryPolicy;
  readonly random?: () => number;
  /**
   * A delay the handler asked for (`retry({delayMs})`, an HTTP Retry-After): it replaces the
   * backoff as given — not capped, since the handler knows best — floored at 0. Ignored unless finite.
   */
  readonly retryAfterMs?: number;
  /** To tier the retry (queued if within the hot horizon, else a cold scheduled row). */
  readonly horizons?: TierHorizons;
}

/**
 * After a failed attempt: `dead` once `attempt >= maxAttempts`, otherwise retry at
 * `now + delay`, tiered like any new job. An explicit handler delay does not buy extra attempts.
 */
export function decideAfterFailure(input: FailureInput): FailureDecision {
  if (input.attempt >= input.maxAttempts) return { kind: 'dead' };
  const explicit = input.retryAfterMs;
  const delayMs =
    explicit !== undefined && Number.isFinite(explicit)
      ? explicit
      : retryDelayMs(input.attempt, input.policy ?? DEFAULT_RETRY_POLICY, input.random);
  return retryAt(input.now, delayMs, input.horizons);
}

/**
 * After a snooze (`snooze({delayMs})`): again at `now + delayMs`, no attempt spent, unless the job
 * has used MAX_LIFETIME_ATTEMPTS, where it ends as a failed attempt would.
 */
export function decideAfterSnooze(input: Omit<FailureInput, 'retryAfterMs'> & { delayMs: number }): SnoozeDecision {
  if (input.attempt >= MAX_LIFETIME_ATTEMPTS) return decideAfterFailure({ ...input, retryAfterMs: input.delayMs });
  return { ...retryAt(input.now, Number.isFinite(input.delayMs) ? input.delayMs : 0, input.horizons), kind: 'snooze' };
}

export type SnoozeDecision = FailureDecision | { readonly kind: 'snooze'; readonly runAt: Date; readonly delayMs: number; readonly tier: Tier };

/** Again after `delayMs` (a whole number of ms, at least 0), tiered like a new job. */
function retryAt(now: Date, delayMs: number, horizons: TierHorizons = DEFAULT_HORIZONS) {
  // A handler's delay is not capped, but its run time stays one a job may have: past it the
  // outcome could not be stored, and its group commit failed for every job in it.
  const runAt = new Date(Math.min(now.getTime() + Math.max(0, Math.round(delayMs)), LATEST_RUN_AT_MS));
  return { kind: 'retry' as const, runAt, delayMs: runAt.getTime() - now.getTime(), tier: tierFor(runAt, now, horizons) };
}

/** The name the shared contract uses for decideAfterFailure. */
export const nextAttemptDecision = decideAfterFailure;
