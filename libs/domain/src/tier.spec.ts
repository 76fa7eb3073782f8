import { DEFAULT_HORIZONS, delayMs, entryState, hotHorizonEnd, tierFor, validateHorizons } from './tier';
import { DomainValidationError, InvalidDomainConfigError, InvalidRunAtError } from './errors';

const now = new Date('2026-11-30T09:00:00.000Z');
const at = (ms: number) => new Date(now.getTime() + ms);
const MIN15 = 15 * 60_000;
const H24 = 24 * 3_600_000;

describe('tierFor', () => {
  it('uses 15 min and 24 h by default', () => {
    expect(DEFAULT_HORIZONS).toEqual({ immediateMs: MIN15, hotMs: H24 });
  });

  it.each([
    ['far past', -365 * H24, 'immediate'],
    ['1 ms ago', -1, 'immediate'],
    ['exactly now', 0, 'immediate'],
    ['1 ms from now', 1, 'immediate'],
    ['immediate boundary - 1 ms', MIN15 - 1, 'immediate'],
    ['immediate boundary exactly (inclusive)', MIN15, 'immediate'],
    ['immediate boundary + 1 ms', MIN15 + 1, 'hot'],
    ['hot boundary - 1 ms', H24 - 1, 'hot'],
    ['hot boundary exactly (inclusive)', H24, 'hot'],
    ['hot boundary + 1 ms', H24 + 1, 'cold'],
    ['a year ahead', 365 * H24, 'cold'],
  ] as const)('%s → %s', (_name, offset, tier) => {
    expect(tierFor(at(offset), now)).toBe(tier);
  });

  it('agrees with the promoter window: cold exactly when runAt > hotHorizonEnd(now)', () => {
    for (const offset of [H24 - 1, H24, H24 + 1]) {
      const runAt = at(offset);
      expect(tierFor(runAt, now) === 'cold').toBe(runAt > hotHorizonEnd(now));
    }
  });

  it('honours configured horizons, boundaries included', () => {
    const horizons = { immediateMs: 1_000, hotMs: 60_000 };
    expect(tierFor(at(1_000), now, horizons)).toBe('immediate');
    expect(tierFor(at(1_001), now, horizons)).toBe('hot');
    expect(tierFor(at(60_000), now, horizons)).toBe('hot');
    expect(tierFor(at(60_001), now, horizons)).toBe('cold');
  });

  it('with equal horizons nothing is hot', () => {
    const horizons = { immediateMs: 60_000, hotMs: 60_000 };
    expect(tierFor(at(60_000), now, horizons)).toBe('immediate');
    expect(tierFor(at(60_001), now, horizons)).toBe('cold');
  });

  it('rejects an invalid date instead of calling it cold', () => {
    expect(() => tierFor(new Date(NaN), now)).toThrow(InvalidRunAtError);
    expect(() => tierFor(now, new Date('nope'))).toThrow(InvalidRunAtError);
  });
});

describe('hotHorizonEnd', () => {
  it('is now + hotMs', () => {
    expect(hotHorizonEnd(now)).toEqual(at(H24));
    expect(hotHorizonEnd(now, { immediateMs: 1, hotMs: 5 })).toEqual(at(5));
  });
});

describe('validateHorizons', () => {
  it('accepts the defaults and equal horizons', () => {
    expect(validateHorizons(DEFAULT_HORIZONS)).toBe(DEFAULT_HORIZONS);
    expect(validateHorizons({ immediateMs: 5, hotMs: 5 })).toEqual({ immediateMs: 5, hotMs: 5 });
  });

  it.each([
    [{ immediateMs: 0, hotMs: 10 }, 'immediateMs', 'positive_integer'],
    [{ immediateMs: -1, hotMs: 10 }, 'immediateMs', 'positive_integer'],
    [{ immediateMs: 1.5, hotMs: 10 }, 'immediateMs', 'positive_integer'],
    [{ immediateMs: NaN, hotMs: 10 }, 'immediateMs', 'positive_integer'],
    [{ immediateMs: 1, hotMs: 0 }, 'hotMs', 'positive_integer'],
    [{ immediateMs: 1, hotMs: Infinity }, 'hotMs', 'positive_integer'],
    [{ immediateMs: 11, hotMs: 10 }, 'immediateMs', 'not_after_hot'],
  ])('rejects %j (%s: %s)', (horizons, field, rule) => {
    let error: unknown;
    try {
      validateHorizons(horizons);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidDomainConfigError);
    expect(error).toBeInstanceOf(DomainValidationError);
    expect(error).toMatchObject({ field, rule });
    expect((error as Error).message).toContain(field);
  });
});

describe('delayMs', () => {
  it('is the time left until runAt', () => {
    expect(delayMs(at(1), now)).toBe(1);
    expect(delayMs(at(H24), now)).toBe(H24);
  });

  it('is never negative: due and overdue jobs have no delay', () => {
    expect(delayMs(now, now)).toBe(0);
    expect(delayMs(at(-1), now)).toBe(0);
    expect(delayMs(at(-H24), now)).toBe(0);
    expect(Object.is(delayMs(at(-1), now), 0)).toBe(true);
  });

  it('rejects an invalid date', () => {
    expect(() => delayMs(new Date(NaN), now)).toThrow(InvalidRunAtError);
  });
});

describe('entryState', () => {
  it('a cold row waits scheduled for the promoter; immediate and hot rows are queued', () => {
    expect(entryState('cold')).toBe('scheduled');
    expect(entryState('hot')).toBe('queued');
    expect(entryState('immediate')).toBe('queued');
  });
});
