/**
 * A Postgres array literal of numbers and plain tokens (digits, letters and `._:-`; never a
 * comma, brace, quote, backslash or space), null elements as NULL. node-postgres escapes every
 * element of an array parameter with a regular expression; for the ids, codes and times of a
 * 500-row group commit that was ~10% of a worker's CPU per job (a CPU profile). Free text
 * (errors, JSON) still goes as an ordinary array parameter.
 */
export function plainArray(values: readonly (number | string | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : v)).join(',')}}`;
}

/** Epoch milliseconds, or null. Statements turn them into timestamptz with to_timestamp(ms / 1000.0). */
export function epochMs(d: Date | null | undefined): number | null {
  return d ? d.getTime() : null;
}
