import { asUtcIfZoneless, parseRunAt } from './run-at';
import { DomainValidationError, InvalidRunAtError } from './errors';

function rule(raw: unknown): string {
  try {
    parseRunAt(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidRunAtError);
    expect(e).toBeInstanceOf(DomainValidationError);
    expect((e as InvalidRunAtError).field).toBe('runAt');
    expect((e as Error).message).toMatch(/^runAt /);
    return (e as InvalidRunAtError).rule;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
}

describe('parseRunAt', () => {
  it.each([
    ['2026-11-30T09:00:00Z', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T09:00Z', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30t09:00:00z', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T10:00:00+01:00', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T04:00:00-05:00', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T14:45:00+05:45', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T09:00:00+00:00', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T09:00:00-00:00', '2026-11-30T09:00:00.000Z'],
    ['2026-12-01T00:30:00+15:30', '2026-11-30T09:00:00.000Z'],
    ['2026-11-30T09:00:00.5Z', '2026-11-30T09:00:00.500Z'],
    ['2026-11-30T09:00:00.123Z', '2026-11-30T09:00:00.123Z'],
    ['2026-11-30T09:00:00.123999999Z', '2026-11-30T09:00:00.123Z'],
    ['2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['2026-12-31T23:59:59.999Z', '2026-12-31T23:59:59.999Z'],
    ['1999-01-01T00:00:00Z', '1999-01-01T00:00:00.000Z'],
    ['0050-01-01T00:00:00Z', '0050-01-01T00:00:00.000Z'],
  ])('%s → %s', (raw, iso) => {
    expect(parseRunAt(raw).toISOString()).toBe(iso);
  });

  it.each([
    ['2026-11-30T09:00:00', 'missing_zone'],
    ['2026-11-30T09:00', 'missing_zone'],
    ['2026-11-30T09:00:00.000', 'missing_zone'],
    ['2026-11-30', 'format'],
    ['2026-11-30 09:00:00Z', 'format'],
    ['2026-11-30T09:00:00+0100', 'format'],
    ['2026-11-30T09:00:00+01', 'format'],
    ['2026-11-30T09:00:00 Z', 'format'],
    [' 2026-11-30T09:00:00Z', 'format'],
    ['2026-11-30T09:00:00Z ', 'format'],
    ['20261130T090000Z', 'format'],
    ['+002026-11-30T09:00:00Z', 'format'],
    ['2026-11-30T9:00:00Z', 'format'],
    ['2026-11-30T09:00:00.Z', 'format'],
    ['2026-11-30T09:00:00.1234567890Z', 'format'],
    ['Mon, 30 Nov 2026 09:00:00 GMT', 'format'],
    ['1796029200000', 'format'],
    ['tomorrow', 'format'],
    ['', 'format'],
    ['2026-11-30T09:00:00Z'.repeat(4), 'format'],
    ['2026-13-01T00:00:00Z', 'out_of_range'],
    ['2026-00-01T00:00:00Z', 'out_of_range'],
    ['2026-02-29T00:00:00Z', 'out_of_range'],
    ['2100-02-29T00:00:00Z', 'out_of_range'],
    ['2026-04-31T00:00:00Z', 'out_of_range'],
    ['2026-11-00T00:00:00Z', 'out_of_range'],
    ['2026-11-30T24:00:00Z', 'out_of_range'],
    ['2026-11-30T09:60:00Z', 'out_of_range'],
    ['2026-11-30T09:00:60Z', 'out_of_range'],
    ['2026-11-30T09:00:00+24:00', 'out_of_range'],
    ['2026-11-30T09:00:00+01:60', 'out_of_range'],
  ])('rejects %j (%s)', (raw, expected) => {
    expect(rule(raw)).toBe(expected);
  });

  it.each([[undefined], [null], [1796029200000], [new Date()], [{}]])('rejects a non-string %p', (raw) => {
    expect(rule(raw)).toBe('type');
  });

  it('names the field it is given', () => {
    expect(() => parseRunAt('nope', 'jobs[0].runAt')).toThrow(/^jobs\[0\]\.runAt /);
  });
});

describe('asUtcIfZoneless', () => {
  it('reads a datetime-local value as UTC and leaves anything else for parseRunAt', () => {
    expect(parseRunAt(asUtcIfZoneless('2026-12-02T10:15')).toISOString()).toBe('2026-12-02T10:15:00.000Z');
    expect(parseRunAt(asUtcIfZoneless('2026-12-02T10:15:30')).toISOString()).toBe('2026-12-02T10:15:30.000Z');
    expect(asUtcIfZoneless('2026-12-02T10:15:00+01:00')).toBe('2026-12-02T10:15:00+01:00');
    expect(asUtcIfZoneless('tomorrow')).toBe('tomorrow');
  });
});
