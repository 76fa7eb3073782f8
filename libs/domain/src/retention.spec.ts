import { DomainValidationError } from './errors';
import { keyReservationDays, retentionBehindSeconds, retentionCutoff, utcDay, validateKeyPolicy, validateKeyReservation, validateRetentionSeconds } from './retention';

describe('retention rules', () => {
  const now = new Date('2026-12-02T10:00:00Z');

  it('cuts off retentionSeconds before now, and measures how far behind from the oldest row left', () => {
    expect(retentionCutoff(now, 3600)).toEqual(new Date('2026-12-02T09:00:00Z'));
    const cutoff = retentionCutoff(now, 30 * 86_400);
    expect(retentionBehindSeconds(cutoff, null)).toBe(0);
    expect(retentionBehindSeconds(cutoff, new Date(cutoff.getTime() - 90_000))).toBe(90);
    expect(retentionBehindSeconds(cutoff, new Date(cutoff.getTime() + 1000))).toBe(0);
    expect(utcDay(new Date('2026-12-02T23:59:59.999Z'))).toBe('2026-12-02');
  });

  it('takes whole seconds from an hour to ten years, or null; and the two key policies', () => {
    expect(validateRetentionSeconds(3600)).toBe(3600);
    expect(validateRetentionSeconds(null)).toBeNull();
    for (const bad of [3599, 3600.5, '3600', 11 * 365 * 86_400]) {
      expect(() => validateRetentionSeconds(bad)).toThrow(DomainValidationError);
    }
    expect(validateKeyPolicy('freed')).toBe('freed');
    expect(() => validateKeyPolicy('gone')).toThrow(/keysAfterRetention must be one of reserved, freed, got "gone"/);
  });

  it('reserves a key through whole days after its removal, or forever; takes a day to ten years, "forever" or null', () => {
    expect(keyReservationDays(86_400)).toBe(1);
    expect(keyReservationDays(86_401)).toBe(2); // rounded up to whole days
    expect(keyReservationDays(400 * 86_400)).toBe(400);
    expect(keyReservationDays('forever')).toBeNull();
    expect(validateKeyReservation(86_400)).toBe(86_400);
    expect(validateKeyReservation('forever')).toBe('forever');
    expect(validateKeyReservation(null)).toBeNull();
    for (const bad of [86_399, 86_400.5, '86400', 'always', 11 * 365 * 86_400]) {
      expect(() => validateKeyReservation(bad)).toThrow(/keyReservationSeconds must be a whole number of seconds from 86400 \(a day\)/);
    }
  });
});
