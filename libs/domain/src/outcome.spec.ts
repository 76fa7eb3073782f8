import { completed, decideAfterOutcome, discard, isHandlerOutcome, retry, type HandlerOutcome } from './outcome';

describe('handler outcome helpers', () => {
  it('build the union members', () => {
    expect(completed()).toEqual({ type: 'completed' });
    expect(completed({ id: 'ch_1' })).toEqual({ type: 'completed', result: { id: 'ch_1' } });
    expect(completed(null)).toEqual({ type: 'completed', result: null });
    expect(retry()).toEqual({ type: 'retry' });
    expect(retry({ delayMs: 5000, reason: '503 from upstream' })).toEqual({ type: 'retry', delayMs: 5000, reason: '503 from upstream' });
    expect(discard('no such customer')).toEqual({ type: 'discard', reason: 'no such customer' });
    expect(discard('gone', { status: 410 })).toEqual({ type: 'discard', reason: 'gone', result: { status: 410 } });
  });

  it('recognise outcomes coming back from untyped code', () => {
    for (const ok of [completed(), completed(1), retry(), retry({ delayMs: 1 }), discard('x')]) expect(isHandlerOutcome(ok)).toBe(true);
    for (const bad of [undefined, null, 'completed', {}, { type: 'done' }, { type: 'discard' }, { type: 'retry', delayMs: '5' }, { type: 'retry', reason: 5 }]) {
      expect(isHandlerOutcome(bad)).toBe(false);
    }
  });
});

describe('decideAfterOutcome', () => {
  const now = new Date('2026-11-30T09:00:00.000Z');
  const ctx = { attempt: 1, maxAttempts: 3, now, random: () => 0 };

  it('completed → succeeded, with its result', () => {
    expect(decideAfterOutcome(completed(), ctx)).toEqual({ next: 'succeeded' });
    expect(decideAfterOutcome(completed({ n: 1 }), ctx)).toEqual({ next: 'succeeded', result: { n: 1 } });
  });

  it('discard → dead at once, whatever attempts are left', () => {
    expect(decideAfterOutcome(discard('bad address'), ctx)).toEqual({ next: 'dead', reason: 'bad address' });
  });

  it('retry → backoff, or the handler delay, and keeps the reason', () => {
    expect(decideAfterOutcome(retry(), ctx)).toEqual({ next: 'retry', runAt: new Date(now.getTime() + 500), delayMs: 500, tier: 'immediate' });
    expect(decideAfterOutcome(retry({ delayMs: 3_600_000, reason: 'rate limited' }), ctx)).toEqual({
      next: 'retry',
      runAt: new Date(now.getTime() + 3_600_000),
      delayMs: 3_600_000,
      tier: 'hot',
      reason: 'rate limited',
    });
  });

  it('retry on the last attempt → dead, saying why', () => {
    const outcome: HandlerOutcome = retry({ reason: 'still 503' });
    expect(decideAfterOutcome(outcome, { ...ctx, attempt: 3 })).toEqual({ next: 'dead', reason: 'attempts exhausted (3/3)' });
  });
});
