import { unknownKindReofferAt } from './delivery-timing';

describe('unknownKindReofferAt', () => {
  it('offers a hint again 5 s later while its job is barely late, a tenth of its lateness later, once a minute at most', () => {
    const now = 1_000_000_000;
    expect(unknownKindReofferAt(now, now) - now).toBe(5_000);
    expect(unknownKindReofferAt(now - 200_000, now) - now).toBe(20_000);
    expect(unknownKindReofferAt(now - 3_600_000, now) - now).toBe(60_000);
  });
});
