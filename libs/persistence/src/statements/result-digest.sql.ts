/**
 * A job's result digest: the first 16 bytes of SHA-256 over the stored result's text (jsonb's
 * own canonical form, so the same JSON always gives the same digest), NULL without a result.
 * The API shows it, in hex, beside the result while the job is kept, and a removed job's key
 * keeps it (retired_keys.result_digest), so a replay can tell which result the job had.
 */
export function resultDigest(column: string): string {
  return `substr(sha256(convert_to(${column}::text, 'UTF8')), 1, 16)`;
}
