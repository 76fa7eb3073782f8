import type { Issues } from '../http/validation';

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
