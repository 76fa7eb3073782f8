/**
 * Typed readers for environment variables. Each throws `ConfigError` naming the variable and
 * quoting the bad value, so a misconfigured process stops at boot with one readable line.
 * An empty string counts as unset: `FOO= node …` behaves like no FOO at all.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;

function raw(env: Env, name: string): string | undefined {
  const value = env[name];
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
}

export interface IntRange {
  min?: number;
  max?: number;
  /** Named after the range in an error (`ms`), so `25` meant as seconds says what it is read as. */
  unit?: string;
}

export function envInt(env: Env, name: string, fallback: number, range: IntRange = {}): number {
  const min = range.min ?? Number.MIN_SAFE_INTEGER;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const n = /^[+-]?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer ${describeRange(range)}(got ${quote(value)})`);
  }
  return n;
}

/** A decimal number (`0.5`, `12`, `1e3`) within `range`. */
export function envNumber(env: Env, name: string, fallback: number, range: IntRange = {}): number {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const n = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < (range.min ?? -Infinity) || n > (range.max ?? Infinity)) {
    throw new ConfigError(`${name} must be a number ${describeRange(range)}(got ${quote(value)})`);
  }
  return n;
}

function describeRange({ min, max, unit }: IntRange): string {
  const u = unit ? `${unit} ` : '';
  if (min !== undefined && max !== undefined) return `from ${min} to ${max} ${u}`;
  if (min !== undefined) return `>= ${min} ${u}`;
  if (max !== undefined) return `<= ${max} ${u}`;
  return u === '' ? '' : `in ${u}`;
}

export interface StringRule {
  /** Allowed shape; the message quotes `describe` (or the pattern) when a value misses it. */
  pattern?: RegExp;
  describe?: string;
  oneOf?: readonly string[];
  /** The value may hold a password: the message does not quote it. */
  secret?: boolean;
}

export function envString(env: Env, name: string, fallback: string, rule?: StringRule): string;
export function envString(env: Env, name: string, fallback: string | undefined, rule?: StringRule): string | undefined;
export function envString(env: Env, name: string, fallback: string | undefined, rule: StringRule = {}): string | undefined {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  checkString(name, value, rule);
  return value;
}

function checkString(name: string, value: string, rule: StringRule): void {
  if (rule.oneOf && !rule.oneOf.includes(value)) {
    throw new ConfigError(`${name} must be one of ${rule.oneOf.join(', ')} (got ${quote(value)})`);
  }
  if (rule.pattern && !rule.pattern.test(value)) {
    throw new ConfigError(`${name} must be ${rule.describe ?? `like ${String(rule.pattern)}`} (${rule.secret ? 'the value is not shown: it may hold a password' : `got ${quote(value)}`})`);
  }
}

/** Comma-separated list; blanks around items are dropped, empty items are ignored. */
export function envList(env: Env, name: string, fallback: readonly string[], rule: StringRule = {}): string[] {
  const value = raw(env, name);
  if (value === undefined) return [...fallback];
  const items = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const item of items) checkString(name, item, rule);
  return items;
}

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

export function envBool(env: Env, name: string, fallback: boolean): boolean {
  const value = raw(env, name);
  if (value === undefined) return fallback;
  const v = value.toLowerCase();
  if (TRUE.includes(v)) return true;
  if (FALSE.includes(v)) return false;
  throw new ConfigError(`${name} must be true or false (got ${quote(value)})`);
}

/**
 * A URL whose scheme is one of `protocols` (e.g. `['redis:', 'rediss:']`). The bad value is not
 * quoted: URLs carry passwords.
 */
export function envUrl(env: Env, name: string, fallback: string, protocols: readonly string[], example = `${protocols[0]}//host:port`): string {
  const value = raw(env, name) ?? fallback;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(`${name} is not a URL (expected ${example})`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')} (got ${parsed.protocol}//)`);
  }
  return value;
}
