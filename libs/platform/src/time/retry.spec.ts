import { retryWithBackoff } from './retry';

describe('retryWithBackoff', () => {
  it('tries again after a failure, with doubling pauses capped at maxMs, and answers the first success', async () => {
    let calls = 0;
    const pauses: number[] = [];
    const answer = await retryWithBackoff(
      async () => {
        if (++calls < 4) throw new Error(`try ${calls}`);
        return 'done';
      },
      { firstMs: 1, maxMs: 3, until: () => Date.now() + 60_000, onRetry: (_err, pause) => pauses.push(pause) },
    );
    expect(answer).toBe('done');
    expect(pauses).toEqual([1, 2, 3]);
  });

  it('throws the last error once the next try would start after the deadline, without pausing for it', async () => {
    let calls = 0;
    const retried: string[] = [];
    const clock = { ms: 0 };
    const failing = retryWithBackoff(
      async () => {
        clock.ms += 10;
        throw new Error(`try ${++calls}`);
      },
      { firstMs: 1, maxMs: 1, until: () => 25, now: () => clock.ms, onRetry: (err) => retried.push((err as Error).message) },
    );
    await expect(failing).rejects.toThrow('try 3');
    expect(retried).toEqual(['try 1', 'try 2']);
  });

  it('gives up at once when the deadline has passed (a shutdown)', async () => {
    let calls = 0;
    const once = retryWithBackoff(async () => Promise.reject(new Error(`try ${++calls}`)), { firstMs: 500, maxMs: 5000, until: () => 0 });
    await expect(once).rejects.toThrow('try 1');
  });

  it('given the error a first try elsewhere ended with, pauses before its own first try and gives that error up if no try fits', async () => {
    const pauses: number[] = [];
    let calls = 0;
    const answer = await retryWithBackoff(async () => `try ${++calls}`, { firstMs: 1, maxMs: 3, until: () => Date.now() + 60_000, failed: new Error('first'), onRetry: (_err, pause) => pauses.push(pause) });
    expect([answer, pauses]).toEqual(['try 1', [1]]);
    const late = retryWithBackoff(async () => `try ${++calls}`, { firstMs: 500, maxMs: 5000, until: () => 0, failed: new Error('first') });
    await expect(late).rejects.toThrow('first');
    expect(calls).toBe(1);
  });
});
