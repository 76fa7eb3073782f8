import type { ListPosition } from '@almanac/persistence';

/** Opaque to clients: base64url of `[runAt with microseconds, id]`. */
export function encodeCursor(p: ListPosition): string {
  return Buffer.from(JSON.stringify([p.runAt, p.id]), 'utf8').toString('base64url');
}

const POSITION_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** null when the text is not a cursor this API issued. */
export function decodeCursor(text: string): ListPosition | null {
  if (text.length > 200 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 2) return null;
    const [runAt, id] = v as unknown[];
    if (typeof runAt !== 'string' || !POSITION_TIME.test(runAt)) return null;
    // Date.parse rolls 2026-02-30 over to March and accepts year 0; Postgres refuses both (a 500).
    const ms = Date.parse(runAt);
    if (Number.isNaN(ms) || runAt < '0001' || new Date(ms).toISOString().slice(0, 19) !== runAt.slice(0, 19)) return null;
    // A job id is a positive bigint: a forged one outside it failed in Postgres (a 500).
    if (typeof id !== 'string' || !/^\d{1,19}$/.test(id) || BigInt(id) > 9223372036854775807n) return null;
    return { runAt, id };
  } catch {
    return null;
  }
}
