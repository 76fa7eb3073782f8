import { unstorableJson } from '@almanac/domain';

/** The most JSON a stored result holds (a job's outcome, an effect's call), in UTF-8 bytes: 1 MiB. */
export const MAX_RESULT_BYTES = 1024 * 1024;
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
 * leases ran out). U+0000 in a string: 22P05; a lone surrogate: 22P02 (unstorableJson).
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
  const unstorable = unstorableJson(text);
  if (unstorable === 'nul_character') throw refusedValue('22P05', `${what} holds U+0000, which jsonb cannot`);
  if (unstorable === 'unpaired_surrogate') throw refusedValue('22P02', `${what} holds a lone surrogate (half a character), which jsonb cannot`);
  return text;
}
