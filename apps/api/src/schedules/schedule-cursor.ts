/**
 * A schedule list's cursor: the base64url of the last key on the page. One home for its rule, so
 * the console's links back to a page accept exactly what GET /v1/schedules does.
 */
export function encodeScheduleCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** The key a cursor names; null when it is not one this API returned (not base64url, empty, a NUL). */
export function decodeScheduleCursor(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,1100}$/.test(cursor)) return null;
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  return key !== '' && !key.includes('\u0000') ? key : null;
}
