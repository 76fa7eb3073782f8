import { InvalidDomainConfigError, InvalidRunAtError } from './errors';

/**
 * Where a job lives until it runs (design.md, "tiers"):
 * - `immediate`: due within the immediate horizon (or already past): row + a hint on the hot queue;
 * - `hot`: due within the hot horizon: row + a hint on the hot queue (the same entry: its
 *   envelope comes due when the row does, whichever tier; the two differ only in the API's answer);
 * - `cold`: due later: row only, until the promoter moves it into the queue.
 */
export type Tier = 'immediate' | 'hot' | 'cold';

/** Horizons measured from `now`, in milliseconds. */
export interface TierHorizons {
  readonly immediateMs: number;
  readonly hotMs: number;
}

export const DEFAULT_HORIZONS: TierHorizons = Object.freeze({ immediateMs: 15 * 60_000, hotMs: 24 * 3_600_000 });

/**
 * Checks horizons from configuration: whole, positive milliseconds, with `immediateMs <= hotMs`
 * (equal is allowed). Returns them unchanged.
 */
export function validateHorizons(horizons: TierHorizons): TierHorizons {
  for (const field of ['immediateMs', 'hotMs'] as const) {
    const value = horizons[field];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new InvalidDomainConfigError(field, 'positive_integer', `${field} must be a positive whole number of milliseconds, got ${String(value)}`);
    }
  }
  if (horizons.immediateMs > horizons.hotMs) {
    throw new InvalidDomainConfigError(
      'immediateMs',
      'not_after_hot',
      `immediateMs (${horizons.immediateMs}) must not exceed hotMs (${horizons.hotMs})`,
    );
  }
  return horizons;
}

/**
 * The tier of a job due at `runAt`, seen at `now`.
 *
 * Boundaries are inclusive: with d = runAt - now,
 *   d <= immediateMs            → immediate (so any past runAt, d <= 0, is immediate: due now)
 *   immediateMs < d <= hotMs    → hot
 *   d > hotMs                   → cold
 * runAt = now + 15 min exactly is immediate; + 15 min + 1 ms is hot; now + 24 h exactly is hot,
 * + 1 ms more is cold. Inclusive because the promoter claims cold rows with
 * `run_at <= now + hotMs`: "cold" is then exactly "the promoter would not claim it yet", so a row
 * the API just wrote as cold is never already inside the promoter's window.
 */
export function tierFor(runAt: Date, now: Date, horizons: TierHorizons = DEFAULT_HORIZONS): Tier {
  const d = runAt.getTime() - now.getTime();
  if (Number.isNaN(d)) {
    throw new InvalidRunAtError('runAt', 'invalid_date', 'runAt must be a valid date');
  }
  if (d <= horizons.immediateMs) return 'immediate';
  if (d <= horizons.hotMs) return 'hot';
  return 'cold';
}

/** The end of the hot window at `now` (inclusive): rows with runAt at or before it belong in the queue. */
export function hotHorizonEnd(now: Date, horizons: TierHorizons = DEFAULT_HORIZONS): Date {
  return new Date(now.getTime() + horizons.hotMs);
}

/** Queue delay for a job due at `runAt`: never negative, so an overdue job is delivered at once. */
export function delayMs(runAt: Date, now: Date): number {
  const d = runAt.getTime() - now.getTime();
  if (Number.isNaN(d)) {
    throw new InvalidRunAtError('runAt', 'invalid_date', 'runAt must be a valid date');
  }
  return d > 0 ? d : 0;
}

/**
 * The state a row takes in its tier: a cold row waits `scheduled` for the promoter; an immediate
 * or hot one is `queued` and goes on the hot queue. Ingest, reschedules and retries all use it.
 */
export function entryState(tier: Tier): 'scheduled' | 'queued' {
  return tier === 'cold' ? 'scheduled' : 'queued';
}
