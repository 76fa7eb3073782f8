import { TokenBuckets } from './token-bucket';

describe('TokenBuckets', () => {
  it('spends up to capacity, then refills at the rate and says when enough is back', () => {
    const b = new TokenBuckets();
    expect(b.take('t', 10, 5, 10, 0)).toEqual({ ok: true });
    expect(b.take('t', 1, 5, 10, 0)).toEqual({ ok: false, retryAfterMs: 200 });
    expect(b.take('t', 1, 5, 10, 200)).toEqual({ ok: true });
    expect(b.take('t', 5, 5, 10, 1200)).toEqual({ ok: true });
    expect(b.take('other', 10, 5, 10, 1200)).toEqual({ ok: true });
  });

  it('never refills past capacity', () => {
    const b = new TokenBuckets();
    b.take('t', 1, 100, 10, 0);
    expect(b.take('t', 11, 100, 10, 1_000_000)).toMatchObject({ ok: false });
    expect(b.take('t', 10, 100, 10, 1_000_000)).toEqual({ ok: true });
  });

  it('after the clock is stepped back, a bucket holds what it had and refills at the rate, not after the step', () => {
    const b = new TokenBuckets();
    for (let i = 0; i < 10; i++) b.take('t', 1, 10, 10, 3_600_000);
    expect(b.take('t', 1, 10, 10, 0)).toEqual({ ok: false, retryAfterMs: 100 }); // an hour back: one token's wait, not an hour's
    expect(b.take('t', 1, 10, 10, 100)).toEqual({ ok: true });
  });
});
