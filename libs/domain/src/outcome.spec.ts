import { completed, discard, isHandlerOutcome, retry, snooze, handlerOutcome } from './outcome';

describe('handler outcome helpers', () => {
  it('build the union members', () => {
    expect(completed()).toEqual({ type: 'completed' });
    expect(completed({ id: 'ch_1' })).toEqual({ type: 'completed', result: { id: 'ch_1' } });
    expect(completed(null)).toEqual({ type: 'completed', result: null });
    expect(retry()).toEqual({ type: 'retry' });
    expect(retry({ delayMs: 5000, reason: '503 from upstream' })).toEqual({ type: 'retry', delayMs: 5000, reason: '503 from upstream' });
    expect(snooze({ delayMs: 30_000, reason: 'held by another run' })).toEqual({ type: 'snooze', delayMs: 30_000, reason: 'held by another run' });
    expect(discard('no such customer')).toEqual({ type: 'discard', reason: 'no such customer' });
    expect(discard('gone', { status: 410 })).toEqual({ type: 'discard', reason: 'gone', result: { status: 410 } });
  });

  it('recognise outcomes coming back from untyped code', () => {
    for (const ok of [completed(), completed(1), retry(), retry({ delayMs: 1 }), snooze({ delayMs: 0 }), discard('x')]) expect(isHandlerOutcome(ok)).toBe(true);
    for (const bad of [undefined, null, 'completed', {}, { type: 'done' }, { type: 'discard' }, { type: 'retry', delayMs: '5' }, { type: 'retry', reason: 5 }, { type: 'snooze' }, { type: 'snooze', delayMs: NaN }, { type: 'snooze', delayMs: 1, reason: 2 }]) {
      expect(isHandlerOutcome(bad)).toBe(false);
    }
  });

  it('refuses, saying what it was, a value that is not an outcome', () => {
    for (const ok of [completed(), retry({ reason: 'later' }), discard('gone', { status: 410 })]) expect(handlerOutcome(ok)).toBe(ok);
    const cases: [unknown, RegExp][] = [
      [undefined, /returned undefined, not an outcome/],
      [{ type: 'done' }, /an object with type "done"/],
      [{ type: 'snooze' }, /a snooze outcome with invalid fields/],
    ];
    for (const [value, message] of cases) expect(() => handlerOutcome(value)).toThrow(message);
  });
});
