/** The most JSON a stored result holds (a job's outcome, an effect's call), in UTF-8 bytes: 1 MiB. */
export const MAX_RESULT_BYTES = 1024 * 1024;
/**
 * An escape jsonb refuses (SQLSTATE 22P05), not an escaped backslash before one: `\u0000`, or a
 * surrogate's `\ud8xx`–`\udfxx`, which JSON.stringify writes only for a lone one (half an emoji
 * from a string cut in the wrong place).
 */
const JSONB_REFUSES = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;

/** An error carrying the SQLSTATE Postgres would refuse a value with, made before any statement. */
export function refusedValue(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * `value` as JSON text jsonb will take (null for undefined), or refused before the statement with
 * the SQLSTATE Postgres would give: inside a handler's transaction a refused statement aborts the
 * transaction, and what is refused here leaves it whole for what is written instead. Not JSON (a
 * BigInt, a cycle): 22032, invalid_json_text (a TypeError failed the group commit of every job
 * batched with it). Over MAX_RESULT_BYTES: 22001, a value too long (past jsonb's 256 MiB one
 * result failed its whole group commit with 54000, every tenant's outcomes in it, until their
 * leases ran out). U+0000 or a lone surrogate in a string: 22P05.
 */
export function storedJson(value: unknown, what: string): string | null {
  if (value === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw refusedValue('22032', `${what} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (text === undefined) return null;
  // A UTF-16 unit is at most 3 bytes of UTF-8: counted only when it could be over.
  if (text.length > MAX_RESULT_BYTES / 3 && Buffer.byteLength(text) > MAX_RESULT_BYTES) throw refusedValue('22001', `${what} is ${Buffer.byteLength(text)} bytes of JSON, over ${MAX_RESULT_BYTES}`);
  if (JSONB_REFUSES.test(text)) throw refusedValue('22P05', `${what} holds U+0000 or a lone surrogate, which jsonb cannot`);
  return text;
}
