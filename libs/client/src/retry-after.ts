/**
 * A Retry-After header in milliseconds from `nowMs`: delay-seconds (`"2"`) or an HTTP date
 * (`"Wed, 02 Dec 2026 10:00:00 GMT"`, never negative). `undefined` when absent or unreadable.
 */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date starts with the day's name; Date.parse alone would read "1.5" as a day in 2001.
  const at = /^[A-Za-z]{3}/.test(value) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
