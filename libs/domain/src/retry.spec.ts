import { DEFAULT_RETRY_POLICY, decideAfterFailure, decideAfterSnooze, LATEST_RUN_AT_MS, MAX_LIFETIME_ATTEMPTS, nextAttemptDecision, retryDelayMs, validateRetryPolicy } from './retry';
import { InvalidDomainConfigError } from './errors';

const fixed = (r: number) => () => r;
const ALMOST_ONE = 1 - Number.EPSILON;

describe('retryDelayMs', () => {
  it('defaults to 1 s base, factor 2, 1 h cap', () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({ baseMs: 1000, factor: 2, maxMs: 3_600_000 });
  });

  it.each([
    [1, 500, 750, 999],
    [2, 1000, 1500, 1999],
    [3, 2000, 3000, 3999],
    [10, 256_000, 384_000, 511_999],
    [12, 1_024_000, 1_536_000, 2_047_999],
    [13, 1_800_000, 2_700_000, 3_599_999], // 4096 s > 1 h: capped from here on
    [50, 1_800_000, 2_700_000, 3_599_999],
    [10_000, 1_800_000, 2_700_000, 3_599_999],
  ])('attempt %i: equal jitter spans [ceiling/2, ceiling)', (attempt, low, mid, high) => {
    expect(retryDelayMs(attempt, DEFAULT_RETRY_POLICY, fixed(0))).toBe(low);
    expect(retryDelayMs(attempt, DEFAULT_RETRY_POLICY, fixed(0.5))).toBe(mid);
    expect(retryDelayMs(attempt, DEFAULT_RETRY_POLICY, fixed(ALMOST_ONE))).toBe(high);
  });

  it('never exceeds the cap, even with a random source that misbehaves', () => {
    expect(retryDelayMs(100, DEFAULT_RETRY_POLICY, fixed(1))).toBe(3_600_000);
    expect(retryDelayMs(100, DEFAULT_RETRY_POLICY, fixed(7))).toBe(3_600_000);
    expect(retryDelayMs(100, DEFAULT_RETRY_POLICY, fixed(-3))).toBe(1_800_000);
  });

  it('is a whole number of milliseconds and grows monotonically for a fixed random', () => {
    let previous = 0;
    for (let attempt = 1; attempt <= 40; attempt++) {
      const d = retryDelayMs(attempt, DEFAULT_RETRY_POLICY, fixed(0.37));
      expect(Number.isInteger(d)).toBe(true);
      expect(d).toBeGreaterThanOrEqual(previous);
      previous = d;
    }
  });

  it('honours a custom policy (factor 1 is a constant delay)', () => {
    expect(retryDelayMs(5, { baseMs: 100, factor: 3, maxMs: 1_000_000 }, fixed(0))).toBe(4050); // 100·3^4 / 2
    expect(retryDelayMs(9, { baseMs: 200, factor: 1, maxMs: 200 }, fixed(0.5))).toBe(150);
  });

  it('uses Math.random by default and stays in range', () => {
    for (let i = 0; i < 200; i++) {
      const d = retryDelayMs(3);
      expect(d).toBeGreaterThanOrEqual(2000);
      expect(d).toBeLessThan(4000);
    }
  });

  it.each([0, -1, 1.5, NaN])('rejects attempt %p', (attempt) => {
    expect(() => retryDelayMs(attempt)).toThrow(RangeError);
  });
});

describe('validateRetryPolicy', () => {
  it('accepts the default', () => {
    expect(validateRetryPolicy(DEFAULT_RETRY_POLICY)).toBe(DEFAULT_RETRY_POLICY);
  });

  it.each([
    [{ baseMs: 0, factor: 2, maxMs: 10 }, 'baseMs'],
    [{ baseMs: 1.5, factor: 2, maxMs: 10 }, 'baseMs'],
    [{ baseMs: 1, factor: 0.5, maxMs: 10 }, 'factor'],
    [{ baseMs: 1, factor: Infinity, maxMs: 10 }, 'factor'],
    [{ baseMs: 100, factor: 2, maxMs: 99 }, 'maxMs'],
  ])('rejects %j (%s)', (policy, field) => {
    expect(() => validateRetryPolicy(policy)).toThrow(InvalidDomainConfigError);
    expect(() => validateRetryPolicy(policy)).toThrow(new RegExp(`^${field} `));
  });
});

describe('decideAfterFailure', () => {
  const now = new Date('2026-11-30T09:00:00.000Z');

  it('retries with backoff while attempts remain', () => {
    expect(decideAfterFailure({ attempt: 1, maxAttempts: 3, now, random: fixed(0) })).toEqual({
      kind: 'retry',
      runAt: new Date('2026-11-30T09:00:00.500Z'),
      delayMs: 500,
      tier: 'immediate',
    });
    expect(decideAfterFailure({ attempt: 2, maxAttempts: 3, now, random: fixed(0.5) })).toMatchObject({ kind: 'retry', delayMs: 1500 });
  });

  it('is dead on the last attempt and beyond', () => {
    expect(decideAfterFailure({ attempt: 3, maxAttempts: 3, now })).toEqual({ kind: 'dead' });
    expect(decideAfterFailure({ attempt: 4, maxAttempts: 3, now })).toEqual({ kind: 'dead' });
    expect(decideAfterFailure({ attempt: 1, maxAttempts: 1, now })).toEqual({ kind: 'dead' });
  });

  it('an explicit delay replaces the backoff, uncapped, floored at 0, but buys no extra attempt', () => {
    const base = { attempt: 1, maxAttempts: 5, now, random: fixed(0) };
    expect(decideAfterFailure({ ...base, retryAfterMs: 30_000 })).toMatchObject({ delayMs: 30_000, runAt: new Date('2026-11-30T09:00:30.000Z') });
    expect(decideAfterFailure({ ...base, retryAfterMs: 2 * 86_400_000 })).toMatchObject({ delayMs: 2 * 86_400_000, tier: 'cold' });
    expect(decideAfterFailure({ ...base, retryAfterMs: -5 })).toMatchObject({ delayMs: 0, runAt: now });
    // Far past any date a job may have: the run time stops at the latest one (it must be storable).
    const far = decideAfterFailure({ ...base, retryAfterMs: 1e16 });
    expect(far).toMatchObject({ kind: 'retry', runAt: new Date(LATEST_RUN_AT_MS) });
    expect(decideAfterFailure({ ...base, retryAfterMs: 0 })).toMatchObject({ delayMs: 0 });
    expect(decideAfterFailure({ ...base, retryAfterMs: NaN })).toMatchObject({ delayMs: 500 });
    expect(decideAfterFailure({ ...base, retryAfterMs: Infinity })).toMatchObject({ delayMs: 500 });
    expect(decideAfterFailure({ ...base, attempt: 5, retryAfterMs: 1 })).toEqual({ kind: 'dead' });
  });

  it('tiers the retry with the given horizons', () => {
    const horizons = { immediateMs: 1000, hotMs: 10_000 };
    const at = (delay: number) => decideAfterFailure({ attempt: 1, maxAttempts: 9, now, retryAfterMs: delay, horizons });
    expect(at(1000)).toMatchObject({ tier: 'immediate' });
    expect(at(1001)).toMatchObject({ tier: 'hot' });
    expect(at(10_000)).toMatchObject({ tier: 'hot' });
    expect(at(10_001)).toMatchObject({ tier: 'cold' });
    // default horizons: an attempt-13 backoff (30..60 min) is hot
    expect(decideAfterFailure({ attempt: 13, maxAttempts: 25, now, random: fixed(0) })).toMatchObject({ tier: 'hot' });
  });

  it('uses the given policy', () => {
    const policy = { baseMs: 10_000, factor: 10, maxMs: 86_400_000 * 2 };
    expect(decideAfterFailure({ attempt: 5, maxAttempts: 9, now, policy, random: fixed(0) })).toMatchObject({ delayMs: 50_000_000, tier: 'hot' });
    // attempt 6 hits the 48 h cap: half of it is exactly the hot horizon (inclusive), more is cold
    expect(decideAfterFailure({ attempt: 6, maxAttempts: 9, now, policy, random: fixed(0) })).toMatchObject({ delayMs: 86_400_000, tier: 'hot' });
    expect(decideAfterFailure({ attempt: 6, maxAttempts: 9, now, policy, random: fixed(0.5) })).toMatchObject({ delayMs: 129_600_000, tier: 'cold' });
  });

  it('is also exported under the contract name nextAttemptDecision', () => {
    expect(nextAttemptDecision).toBe(decideAfterFailure);
  });
});

describe('decideAfterSnooze', () => {
  const now = new Date('2026-11-30T09:00:00.000Z');

  it('comes back after the delay on the last attempt too: a snooze spends none', () => {
    expect(decideAfterSnooze({ attempt: 3, maxAttempts: 3, now, delayMs: 30_000 })).toEqual({
      kind: 'snooze',
      runAt: new Date('2026-11-30T09:00:30.000Z'),
      delayMs: 30_000,
      tier: 'immediate',
    });
    expect(decideAfterSnooze({ attempt: 1, maxAttempts: 3, now, delayMs: 2 * 86_400_000 })).toMatchObject({ kind: 'snooze', tier: 'cold' });
    expect(decideAfterSnooze({ attempt: 1, maxAttempts: 3, now, delayMs: -5 })).toMatchObject({ kind: 'snooze', delayMs: 0 });
    expect(decideAfterSnooze({ attempt: 1, maxAttempts: 3, now, delayMs: 1e16 })).toMatchObject({ runAt: new Date(LATEST_RUN_AT_MS) });
  });

  it('is a failed attempt once the job has used its lifetime of attempts', () => {
    const worn = { attempt: MAX_LIFETIME_ATTEMPTS, now, delayMs: 1000 };
    expect(decideAfterSnooze({ ...worn, maxAttempts: MAX_LIFETIME_ATTEMPTS })).toEqual({ kind: 'dead' });
    expect(decideAfterSnooze({ ...worn, maxAttempts: MAX_LIFETIME_ATTEMPTS + 2 })).toMatchObject({ kind: 'retry', delayMs: 1000 });
  });
});
