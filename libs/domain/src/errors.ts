/**
 * Validation errors raised by the domain. Each names the offending `field` (as the API spells it)
 * and a stable machine-readable `rule`, so the API can map any of them to a 400 whose message
 * names the field, and tests can assert on the rule rather than on wording.
 */
export class DomainValidationError extends Error {
  override readonly name: string = 'DomainValidationError';
  constructor(
    readonly field: string,
    readonly rule: string,
    message: string,
  ) {
    super(message);
  }
}

export class InvalidKeyError extends DomainValidationError {
  override readonly name = 'InvalidKeyError';
}

export class InvalidKindError extends DomainValidationError {
  override readonly name = 'InvalidKindError';
}

export class InvalidRunAtError extends DomainValidationError {
  override readonly name = 'InvalidRunAtError';
}

export class InvalidCronError extends DomainValidationError {
  override readonly name = 'InvalidCronError';
}

export class InvalidTimezoneError extends DomainValidationError {
  override readonly name = 'InvalidTimezoneError';
}

export class InvalidMissedPolicyError extends DomainValidationError {
  override readonly name = 'InvalidMissedPolicyError';
}

/** Configuration given to the domain (horizons, retry policy) that cannot work. */
export class InvalidDomainConfigError extends DomainValidationError {
  override readonly name = 'InvalidDomainConfigError';
}

/** Describes a value for an error message without echoing an unbounded or multi-line string. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') {
    const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
    return JSON.stringify(shown);
  }
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
