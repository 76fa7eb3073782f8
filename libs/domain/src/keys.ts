import { InvalidKeyError, InvalidKindError, describeValue } from './errors';

/**
 * Idempotency keys name the thing the work is for (`invoice:2026-11`, `user:42:trial-ending`).
 *
 * A valid key, after Unicode NFC normalisation:
 * - is 1..200 characters long (Unicode code points);
 * - consists only of letters (any script, with their combining marks), decimal digits and
 *   `- _ . : / @ + =` — so no whitespace, control, quote, `#`, `%` or `,` characters;
 * - does not start with `schedule:`, which is reserved for recurring occurrences (a job keyed
 *   like an occurrence would silently swallow it).
 *
 * Normalisation is NFC only. Nothing is trimmed or case-folded: a key with leading or trailing
 * whitespace is rejected (rule `whitespace`) rather than quietly changed, because a key that
 * differs from what the client sent would break its own lookups by key. NFC matters because
 * keys compare byte-wise (`COLLATE "C"`): `é` typed precomposed or as `e` + accent is one key.
 */
export const KEY_MAX_LENGTH = 200;
export const RESERVED_KEY_PREFIX = 'schedule:';
export const KEY_ALLOWED_DESCRIPTION = 'letters, digits and - _ . : / @ + =';

const KEY_CHAR = /[\p{L}\p{M}\p{Nd}\-_.:/@+=]/u;
const KEY_SHAPE = /^[\p{L}\p{M}\p{Nd}\-_.:/@+=]+$/u;

export function validateKey(raw: unknown, field = 'key'): string {
  const key = validateKeyFormat(raw, field);
  if (key.startsWith(RESERVED_KEY_PREFIX)) {
    throw new InvalidKeyError(field, 'reserved', `${field} must not start with "${RESERVED_KEY_PREFIX}" (reserved for schedules)`);
  }
  return key;
}

/**
 * validateKey without the reserved-prefix rule: the shape of any key a job can have, an
 * occurrence's `schedule:<id>:<instant>` included. For reading by key (a lookup, a bulk filter's
 * `keyPrefix`), never for naming a new job or schedule. A prefix needs nothing else: keys have
 * no whitespace, so one ending in a space could match nothing and is refused the same way.
 */
export function validateKeyFormat(raw: unknown, field = 'key'): string {
  if (typeof raw !== 'string') {
    throw new InvalidKeyError(field, 'type', `${field} must be a string, got ${describeValue(raw)}`);
  }
  const key = raw.normalize('NFC');
  if (key.length === 0) throw new InvalidKeyError(field, 'empty', `${field} must not be empty`);
  if (key.length > KEY_MAX_LENGTH && codePointLength(key) > KEY_MAX_LENGTH) {
    throw new InvalidKeyError(field, 'too_long', `${field} must be at most ${KEY_MAX_LENGTH} characters, got ${codePointLength(key)}`);
  }
  if (/^\s|\s$/u.test(key)) {
    throw new InvalidKeyError(field, 'whitespace', `${field} must not start or end with whitespace`);
  }
  if (!KEY_SHAPE.test(key)) {
    const bad = [...key].find((c) => !KEY_CHAR.test(c)) ?? '';
    throw new InvalidKeyError(
      field,
      'charset',
      `${field} must contain only ${KEY_ALLOWED_DESCRIPTION}; found ${describeChar(bad)}`,
    );
  }
  return key;
}

/**
 * Kinds name a handler and route to its worker pool (queue names, metric labels), so they are
 * deliberately narrow: a lower-case ASCII letter, then up to 63 of `a-z 0-9 _ . -`
 * (`noop`, `http`, `billing.invoice`, `send-email`). Not normalised: `HTTP` is rejected, not lowered.
 */
export const KIND_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;

/** Pool names become Redis keys and metric labels: short, lower-case, no separators. */
export const POOL_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;
export const KIND_MAX_LENGTH = 64;

export function validateKind(raw: unknown, field = 'kind'): string {
  if (typeof raw !== 'string') {
    throw new InvalidKindError(field, 'type', `${field} must be a string, got ${describeValue(raw)}`);
  }
  if (raw.length === 0) throw new InvalidKindError(field, 'empty', `${field} must not be empty`);
  if (raw.length > KIND_MAX_LENGTH) {
    throw new InvalidKindError(field, 'too_long', `${field} must be at most ${KIND_MAX_LENGTH} characters, got ${raw.length}`);
  }
  if (!KIND_PATTERN.test(raw)) {
    throw new InvalidKindError(
      field,
      'charset',
      `${field} must start with a lower-case letter followed by lower-case letters, digits, _ . or -, got ${describeValue(raw)}`,
    );
  }
  return raw;
}

/**
 * The key of a schedule's occurrence: `schedule:<id>:<nominal>`, the nominal time in UTC as
 * `YYYY-MM-DDTHH:MM:SSZ` (always seconds, never milliseconds: cron times are whole minutes).
 * One canonical form, so materialising the same occurrence twice yields the same key, and
 * fixed-width so keys of one schedule sort (byte-wise) in time order.
 */
export function occurrenceKey(scheduleId: string | number | bigint, nominal: Date): string {
  return `${occurrenceKeyPrefix(scheduleId)}${formatNominal(nominal)}`;
}

/** Every occurrence key of a schedule starts with this (for "cancel its future rows"). */
export function occurrenceKeyPrefix(scheduleId: string | number | bigint): string {
  const id = String(scheduleId);
  if (!/^[1-9][0-9]{0,18}$/.test(id)) throw new RangeError(`schedule id must be a positive integer, got ${id}`);
  return `${RESERVED_KEY_PREFIX}${id}:`;
}

/** `2026-11-30T09:00:00Z`. Throws for a time that is not a whole second (it would not round-trip). */
export function formatNominal(nominal: Date): string {
  const ms = nominal.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('nominal time must be a valid date');
  if (ms % 1000 !== 0) throw new RangeError(`nominal time must be a whole second, got ${nominal.toISOString()}`);
  const iso = nominal.toISOString();
  if (iso.length !== 24) throw new RangeError(`nominal time must be within years 0000..9999, got ${iso}`);
  return `${iso.slice(0, 19)}Z`;
}

/** The inverse of occurrenceKey; null for any other key. */
export function parseOccurrenceKey(key: string): { scheduleId: string; nominal: Date } | null {
  const m = /^schedule:([1-9][0-9]{0,18}):(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$/.exec(key);
  if (!m) return null;
  const nominal = new Date(m[2]);
  if (Number.isNaN(nominal.getTime()) || formatNominal(nominal) !== m[2]) return null;
  return { scheduleId: m[1], nominal };
}

function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function describeChar(c: string): string {
  const cp = c.codePointAt(0) ?? 0;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(c) ? `"${c}" (${hex})` : hex;
}
