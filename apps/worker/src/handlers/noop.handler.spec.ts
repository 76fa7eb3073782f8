import { handlerPayload, InvalidPayloadError, type HandlerContext } from '@almanac/kinds';
import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { NOOP_MAX_SLEEP_MS, noopHandler } from './noop.handler';

describe('noop', () => {
  it.each(DOUBLE_RUN_MODES)('succeeds once when the job runs twice (%s)', async (mode) => {
    // noop's only effect is its own success: exactly one attempt may be recorded as succeeded.
    await runTwice(noopHandler, null, {
      mode,
      effects: async (h) => (await h.ds.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM job_attempts WHERE outcome = 'succeeded'`))[0].n,
    });
  });

  it('takes any payload, as it always did; only an object\'s sleepMs is checked', () => {
    for (const p of [null, {}, { a: 1, b: [1, 2] }, [1, 2], 'text', 3, { sleepMs: 0 }, { sleepMs: NOOP_MAX_SLEEP_MS, other: 'x' }]) {
      expect(() => handlerPayload(noopHandler, p)).not.toThrow();
    }
    expect(handlerPayload(noopHandler, { sleepMs: 25 })).toBe(25);
    expect(handlerPayload(noopHandler, { a: 1 })).toBe(0);
    for (const bad of [{ sleepMs: -1 }, { sleepMs: 1.5 }, { sleepMs: '10' }, { sleepMs: NOOP_MAX_SLEEP_MS + 1 }]) {
      expect(() => handlerPayload(noopHandler, bad)).toThrow(InvalidPayloadError);
    }
  });

  const ctx = (signal: AbortSignal) => ({ signal }) as HandlerContext;

  it('waits sleepMs before it succeeds', async () => {
    const t0 = Date.now();
    await expect(noopHandler.handle(ctx(new AbortController().signal), 60)).resolves.toMatchObject({ type: 'completed' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(55);
  });

  it('stops waiting when its signal aborts (timeout, worker shutdown): the attempt fails', async () => {
    const ac = new AbortController();
    const run = noopHandler.handle(ctx(ac.signal), NOOP_MAX_SLEEP_MS);
    ac.abort(new Error('shutdown'));
    await expect(run).rejects.toThrow();
  });
});
