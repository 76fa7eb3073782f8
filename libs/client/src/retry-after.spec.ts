import { retryAfterMs } from './retry-after';

describe('retryAfterMs (Retry-After, RFC 9110)', () => {
  const now = Date.UTC(2026, 11, 2, 10, 0, 0);

  it('reads delay-seconds', () => {
    expect(retryAfterMs('1', now)).toBe(1000);
    expect(retryAfterMs(' 120 ', now)).toBe(120_000);
    expect(retryAfterMs('0', now)).toBe(0);
  });

  it('reads an HTTP date as the time until it, never negative', () => {
    expect(retryAfterMs('Wed, 02 Dec 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Wednesday, 02-Dec-26 10:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Wed, 02 Dec 2026 09:00:00 GMT', now)).toBe(0);
  });

  it('is undefined when absent or unreadable (not a date in 2001 for "1.5")', () => {
    for (const header of [null, '', '1.5', '-1', 'soon', '2026-12-02']) expect(retryAfterMs(header, now)).toBeUndefined();
  });
});
