import {
  KEY_MAX_LENGTH,
  formatNominal,
  occurrenceKey,
  occurrenceKeyPrefix,
  parseOccurrenceKey,
  validateKey,
  validateKeyFormat,
  validateKind,
} from './keys';
import { DomainValidationError, InvalidKeyError, InvalidKindError } from './errors';

function caught(fn: () => unknown): DomainValidationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof DomainValidationError) return e;
    throw e;
  }
  throw new Error('expected a DomainValidationError');
}

describe('validateKey', () => {
  it.each([
    'invoice:2026-11',
    'user:42:trial-ending',
    'a',
    'A_b.c:d/e@f+g=h-1',
    'crème-brûlée',
    'ключ:42',
    '請求書:7',
    'x'.repeat(KEY_MAX_LENGTH),
    'Schedule:1:2026-11-30T09:00:00Z',
    'my-schedule:1',
  ])('accepts %j unchanged', (key) => {
    expect(validateKey(key)).toBe(key);
  });

  it('normalises to NFC, so composed and decomposed spellings are one key', () => {
    const decomposed = 'cafe\u0301';
    const composed = 'caf\u00e9';
    expect(validateKey(decomposed)).toBe(composed);
    expect(validateKey(composed)).toBe(composed);
    expect(validateKey('\u212a')).toBe('K'); // KELVIN SIGN has a canonical mapping to K
  });

  it('counts length in characters (code points) after NFC, boundary included', () => {
    expect(validateKey('é'.repeat(KEY_MAX_LENGTH))).toHaveLength(KEY_MAX_LENGTH);
    expect(validateKey('e\u0301'.repeat(KEY_MAX_LENGTH))).toHaveLength(KEY_MAX_LENGTH); // 400 code units before NFC
    expect(validateKey('𝒜'.repeat(KEY_MAX_LENGTH))).toHaveLength(2 * KEY_MAX_LENGTH); // astral: 2 code units each
    expect(caught(() => validateKey('𝒜'.repeat(KEY_MAX_LENGTH + 1)))).toMatchObject({ rule: 'too_long' });
    expect(caught(() => validateKey('x'.repeat(KEY_MAX_LENGTH + 1)))).toMatchObject({ rule: 'too_long' });
  });

  it.each([
    ['', 'empty'],
    [' invoice', 'whitespace'],
    ['invoice ', 'whitespace'],
    ['invoice\n', 'whitespace'],
    ['\u00a0invoice', 'whitespace'],
    ['in voice', 'charset'],
    ['invoice#1', 'charset'],
    ['a,b', 'charset'],
    ['100%', 'charset'],
    ['quote"d', 'charset'],
    ['tab\there', 'charset'],
    ['nul\u0000', 'charset'],
    ['zero\u200bwidth', 'charset'],
    ['emoji😀', 'charset'],
    ['lone\ud800surrogate', 'charset'],
    ['schedule:1:2026-11-30T09:00:00Z', 'reserved'],
    ['schedule:', 'reserved'],
  ])('rejects %j (%s)', (key, rule) => {
    const error = caught(() => validateKey(key));
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect(error).toMatchObject({ field: 'key', rule });
    expect(error.message).toMatch(/^key /);
  });

  it('names the offending character, invisible ones by code point', () => {
    expect(caught(() => validateKey('a#b')).message).toContain('"#" (U+0023)');
    expect(caught(() => validateKey('a\u0000b')).message).toContain('U+0000');
  });

  it.each([[undefined], [null], [42], [{}], [['a']]])('rejects a non-string %j', (raw) => {
    expect(caught(() => validateKey(raw))).toMatchObject({ field: 'key', rule: 'type' });
  });

  it('uses the field name it is given in the error', () => {
    const error = caught(() => validateKey('', 'jobs[3].key'));
    expect(error.field).toBe('jobs[3].key');
    expect(error.message).toContain('jobs[3].key');
  });
});

describe('validateKeyFormat (reads by key: lookups, prefixes)', () => {
  it("accepts an occurrence's key and any prefix of one, which validateKey reserves", () => {
    for (const key of ['schedule:42:2026-11-30T09:00:00Z', 'schedule:42:', 'schedule:', 'invoice:']) {
      expect(validateKeyFormat(key)).toBe(key);
    }
  });

  it.each([
    ['', 'empty'],
    ['x'.repeat(KEY_MAX_LENGTH + 1), 'too_long'],
    ['batch ', 'whitespace'],
    ['a b', 'charset'],
  ])('still rejects %j (%s), naming the field', (key, rule) => {
    expect(caught(() => validateKeyFormat(key, 'keyPrefix'))).toMatchObject({ field: 'keyPrefix', rule });
  });
});

describe('validateKind', () => {
  it.each(['noop', 'http', 'a', 'billing.invoice', 'send-email', 'v2_sync', 'a'.repeat(64)])('accepts %j', (kind) => {
    expect(validateKind(kind)).toBe(kind);
  });

  it.each([
    ['', 'empty'],
    ['a'.repeat(65), 'too_long'],
    ['HTTP', 'charset'],
    ['Noop', 'charset'],
    ['1st', 'charset'],
    ['-x', 'charset'],
    ['_x', 'charset'],
    ['a b', 'charset'],
    ['a:b', 'charset'],
    ['a/b', 'charset'],
    [' noop', 'charset'],
    ['émail', 'charset'],
  ])('rejects %j (%s)', (kind, rule) => {
    const error = caught(() => validateKind(kind));
    expect(error).toBeInstanceOf(InvalidKindError);
    expect(error).toMatchObject({ field: 'kind', rule });
    expect(error.message).toMatch(/^kind /);
  });

  it('rejects a non-string', () => {
    expect(caught(() => validateKind(7))).toMatchObject({ rule: 'type' });
  });
});

describe('occurrence keys', () => {
  const nominal = new Date('2026-11-30T09:00:00.000Z');

  it('is schedule:<id>:<UTC time to the second with Z>', () => {
    expect(occurrenceKey('17', nominal)).toBe('schedule:17:2026-11-30T09:00:00Z');
    expect(occurrenceKey(17, nominal)).toBe('schedule:17:2026-11-30T09:00:00Z');
    expect(occurrenceKey(17n, nominal)).toBe('schedule:17:2026-11-30T09:00:00Z');
    expect(occurrenceKey('9223372036854775807', nominal)).toBe('schedule:9223372036854775807:2026-11-30T09:00:00Z');
  });

  it('is the same for the same instant however the Date was made', () => {
    const other = new Date('2026-11-30T10:00:00+01:00');
    expect(occurrenceKey(1, other)).toBe(occurrenceKey(1, nominal));
  });

  it('keeps non-zero seconds and rejects sub-second times (they would not round-trip)', () => {
    expect(formatNominal(new Date('2026-11-30T09:00:05Z'))).toBe('2026-11-30T09:00:05Z');
    expect(() => formatNominal(new Date('2026-11-30T09:00:00.001Z'))).toThrow(RangeError);
    expect(() => formatNominal(new Date(NaN))).toThrow(RangeError);
    expect(() => formatNominal(new Date(Date.UTC(10000, 0, 1)))).toThrow(RangeError);
  });

  it('rejects ids that are not positive integers', () => {
    for (const id of ['', '0', '-1', '01', 'abc', '1.5', 1.5, '12345678901234567890']) {
      expect(() => occurrenceKey(id, nominal)).toThrow(RangeError);
    }
  });

  it('passes the key shape check apart from the reserved prefix, and fits easily', () => {
    const key = occurrenceKey('9223372036854775807', nominal);
    expect(caught(() => validateKey(key)).rule).toBe('reserved');
    expect(validateKey(key.slice('schedule:'.length))).toBe(key.slice('schedule:'.length));
    expect(key.length).toBeLessThanOrEqual(KEY_MAX_LENGTH);
  });

  it('sorts byte-wise in time order within a schedule', () => {
    const times = ['2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z', '2026-10-01T00:00:00Z', '2027-01-01T00:00:00Z'];
    const keys = times.map((t) => occurrenceKey(5, new Date(t)));
    const byteSorted = [...keys].sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1));
    expect(byteSorted).toEqual(keys);
    expect(keys.every((k) => k.startsWith(occurrenceKeyPrefix(5)))).toBe(true);
  });

  it('parses back', () => {
    expect(parseOccurrenceKey('schedule:17:2026-11-30T09:00:00Z')).toEqual({ scheduleId: '17', nominal });
    for (const key of [
      'invoice:1',
      'schedule:17:2026-11-30T09:00:00.000Z',
      'schedule:17:2026-11-30T09:00:00',
      'schedule:0:2026-11-30T09:00:00Z',
      'schedule:17:2026-02-30T09:00:00Z',
      'schedule:17:2026-11-30T24:00:00Z',
    ]) {
      expect(parseOccurrenceKey(key)).toBeNull();
    }
  });
});
