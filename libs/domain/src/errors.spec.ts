import {
  DomainValidationError,
  InvalidCronError,
  InvalidDomainConfigError,
  InvalidKeyError,
  InvalidKindError,
  InvalidMissedPolicyError,
  InvalidRunAtError,
  InvalidTimezoneError,
  describeValue,
} from './errors';

describe('DomainValidationError', () => {
  it.each([
    [InvalidKeyError, 'InvalidKeyError'],
    [InvalidKindError, 'InvalidKindError'],
    [InvalidRunAtError, 'InvalidRunAtError'],
    [InvalidCronError, 'InvalidCronError'],
    [InvalidTimezoneError, 'InvalidTimezoneError'],
    [InvalidMissedPolicyError, 'InvalidMissedPolicyError'],
    [InvalidDomainConfigError, 'InvalidDomainConfigError'],
  ])('%p carries field, rule and message, and is one catchable family', (Cls, name) => {
    const e = new Cls('key', 'too_long', 'key must be at most 200 characters');
    expect(e).toBeInstanceOf(DomainValidationError);
    expect(e).toBeInstanceOf(Error);
    expect(e).toMatchObject({ name, field: 'key', rule: 'too_long', message: 'key must be at most 200 characters' });
  });
});

describe('describeValue', () => {
  it.each([
    [null, 'null'],
    [undefined, 'undefined'],
    ['abc', '"abc"'],
    ['x'.repeat(50), `"${'x'.repeat(40)}…"`],
    ['two\nlines', '"two\\nlines"'],
    [42, '42'],
    [NaN, 'NaN'],
    [true, 'true'],
    [[1], 'an array'],
    [{ a: 1 }, 'an object'],
  ])('%p → %s', (value, text) => {
    expect(describeValue(value)).toBe(text);
  });
});
