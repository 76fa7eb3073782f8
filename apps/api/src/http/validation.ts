import { DomainValidationError, describeValue, unstorableJson } from '@almanac/domain';
import { type FieldIssue, invalid } from './api-error';

/** Collects every problem with a request instead of stopping at the first. */
export class Issues {
  readonly list: FieldIssue[] = [];

  constructor(private readonly prefix = '') {}

  add(field: string, rule: string, message: string): void {
    const f = this.prefix ? `${this.prefix}.${field}` : field;
    this.list.push({ field: f, rule, message: this.prefix ? `${this.prefix}.${message}` : message });
  }

  /** Runs a domain validator; a DomainValidationError becomes an issue and `undefined`. */
  run<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      if (err instanceof DomainValidationError) {
        this.add(err.field, err.rule, err.message);
        return undefined;
      }
      throw err;
    }
  }

  get ok(): boolean {
    return this.list.length === 0;
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Flags fields a client sent that the endpoint does not know (typos like `max_attempts`). */
export function rejectUnknown(body: Record<string, unknown>, known: readonly string[], issues: Issues): void {
  for (const k of Object.keys(body)) {
    if (!known.includes(k)) issues.add(k, 'unknown_field', `${k} is not a known field (expected ${known.join(', ')})`);
  }
}

/**
 * Flags query parameters a GET does not know, as `unknown_field` naming each: `?waitsecond=20`
 * is a 400, not a request answered at once as if the wait had not been asked for.
 */
export function rejectUnknownQuery(query: Record<string, unknown>, known: readonly string[], issues: Issues): void {
  for (const k of Object.keys(query)) {
    if (!known.includes(k)) {
      const expected = known.length ? `expected ${known.join(', ')}` : 'it takes none';
      issues.add(k, 'unknown_field', `${k} is not a known query parameter (${expected})`);
    }
  }
}

/** For a GET that takes no query parameters: any is a 400 `unknown_field` (see rejectUnknownQuery). */
export function refuseQuery(query: Record<string, unknown>): void {
  const issues = new Issues();
  rejectUnknownQuery(query, [], issues);
  if (!issues.ok) throw invalid(issues.list);
}

export function intInRange(
  raw: unknown,
  field: string,
  min: number,
  max: number,
  issues: Issues,
): number | undefined {
  if (typeof raw !== 'number' || !Number.isInteger(raw)) {
    issues.add(field, 'integer', `${field} must be an integer, got ${describeValue(raw)}`);
    return undefined;
  }
  if (raw < min || raw > max) {
    issues.add(field, 'range', `${field} must be from ${min} to ${max}, got ${raw}`);
    return undefined;
  }
  return raw;
}

/** A numeric path id (`/tenants/:id`), or 0, which names nothing (a 404), for anything else. */
/** `raw` if it is one of `values`; otherwise an `enum` issue naming them, and undefined. */
export function oneOf<T extends string>(raw: unknown, field: string, values: readonly T[], issues: Issues): T | undefined {
  if (typeof raw === 'string' && (values as readonly string[]).includes(raw)) return raw as T;
  issues.add(field, 'enum', `${field} must be one of ${values.join(', ')}, got ${describeValue(raw)}`);
  return undefined;
}

export function pathId(raw: string): number {
  return /^[1-9][0-9]{0,9}$/.test(raw) ? Number(raw) : 0;
}

/** Query-string integers arrive as text. */
export function queryInt(raw: unknown, field: string, fallback: number, min: number, max: number, issues: Issues): number {
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) {
    issues.add(field, 'integer', `${field} must be an integer from ${min} to ${max}`);
    return fallback;
  }
  return intInRange(Number(raw), field, min, max, issues) ?? fallback;
}

/** One value per query parameter: `?state=a&state=b` is refused rather than half-read. */
export function queryString(raw: unknown, field: string, issues: Issues): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') {
    issues.add(field, 'single_value', `${field} must be given once, as text`);
    return undefined;
  }
  return raw;
}

/** JSON deep equality as jsonb sees it: object key order does not matter. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    return a === b;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => Object.prototype.hasOwnProperty.call(bo, k) && jsonEqual(ao[k], bo[k]));
}

/** Deeper JSON is refused: recursive parsers and comparisons (ours, Postgres') must not overflow. */
export const MAX_PAYLOAD_DEPTH = 64;

type PayloadFault = { rule: 'too_deep' } | { rule: 'not_finite'; path: string };

/**
 * One walk for what a payload cannot keep: nesting past MAX_PAYLOAD_DEPTH, or a number JSON
 * cannot hold (`1e999` parses as Infinity, which JSON.stringify stores as null, so its replay would
 * then differ). Numbers are doubles, as JSON.parse reads them: an integer past ±(2^53 - 1) is kept
 * as the double it parsed to, which cannot be told from a float like 1e300 that is kept exactly
 * (docs/api.md: such ids go in strings). The path is built only on the way back from a fault,
 * so a good payload costs a typeof per value.
 */
function payloadFault(value: unknown, depth: number): PayloadFault | null {
  if (typeof value === 'number') {
    return Number.isFinite(value) ? null : { rule: 'not_finite', path: '' };
  }
  if (typeof value !== 'object' || value === null) return null;
  if (depth >= MAX_PAYLOAD_DEPTH) return { rule: 'too_deep' };
  const values = Array.isArray(value) ? value : Object.values(value);
  for (let i = 0; i < values.length; i++) {
    const fault = payloadFault(values[i], depth + 1);
    if (fault) return stepInto(fault, Array.isArray(value) ? `[${i}]` : `.${Object.keys(value)[i]}`);
  }
  return null;
}

const stepInto = (fault: PayloadFault, step: string): PayloadFault => (fault.rule === 'too_deep' ? fault : { ...fault, path: step + fault.path });

const jsonBytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * Checks a JSON payload: nesting depth, numbers it could not keep as sent (the issue names the
 * value's path, e.g. `payload.x`), size of its serialisation against `maxBytes` (rule `too_large`,
 * which the API answers with 413) and the text jsonb cannot store. Returns the byte size.
 */
export function checkPayload(payload: unknown, field: string, maxBytes: number, issues: Issues): number {
  if (payload === undefined || payload === null) return 0;
  const fault = payloadFault(payload, 0);
  if (fault?.rule === 'too_deep') {
    issues.add(field, 'too_deep', `${field} nests deeper than ${MAX_PAYLOAD_DEPTH} levels`);
    return 0;
  }
  if (fault) {
    const at = field + fault.path;
    issues.add(at, fault.rule, `${at} is a number JSON cannot hold (too large for a double)`);
    return 0;
  }
  const text = JSON.stringify(payload);
  const bytes = jsonBytes(text);
  if (bytes > maxBytes) {
    issues.add(field, 'too_large', `${field} is ${bytes} bytes; the limit is ${maxBytes}`);
  } else {
    const unstorable = unstorableJson(text);
    if (unstorable === 'nul_character') issues.add(field, unstorable, `${field} must not contain the character U+0000`);
    else if (unstorable) issues.add(field, unstorable, `${field} must be valid Unicode (it has an unpaired surrogate)`);
  }
  return bytes;
}
