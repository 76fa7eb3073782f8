import { Liveness } from '../health/liveness';
import { Ticker } from './ticker';

describe('Ticker', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs a turn, then the next everyMs after it ends, never two at once; an error goes to onError and the loop goes on', async () => {
    let active = 0;
    let most = 0;
    const ends: (() => void)[] = [];
    const errors: unknown[] = [];
    let turns = 0;
    const ticker = new Ticker({
      everyMs: 100,
      onError: (err) => errors.push(err),
      turn: () => {
        turns++;
        active++;
        most = Math.max(most, active);
        if (turns === 2) {
          active--;
          return Promise.reject(new Error('turn 2 failed'));
        }
        return new Promise<void>((resolve) => ends.push(() => (active--, resolve())));
      },
    });
    ticker.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(turns).toBe(1);
    await jest.advanceTimersByTimeAsync(500); // the first turn has not ended: no second one
    expect(turns).toBe(1);
    ends.shift()!();
    await jest.advanceTimersByTimeAsync(99);
    expect(turns).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(turns).toBe(2);
    await jest.advanceTimersByTimeAsync(100);
    expect(turns).toBe(3);
    expect(errors).toEqual([new Error('turn 2 failed')]);
    expect(most).toBe(1);
    ends.shift()!();
    await ticker.stop();
  });

  it('stop() waits for the turn in progress, schedules no other, and stops the liveness check', async () => {
    const liveness = new Liveness();
    let end!: () => void;
    let turns = 0;
    const ticker = new Ticker({
      everyMs: 10,
      liveness: { of: liveness, name: 'spec', limitMs: 1 },
      turn: () => (turns++, new Promise<void>((resolve) => (end = resolve))),
    });
    ticker.start();
    await jest.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = ticker.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    end();
    await stopping;
    await jest.advanceTimersByTimeAsync(1000);
    expect(turns).toBe(1);
    expect(liveness.wedged(Date.now() + 3_600_000)).toEqual([]);
  });
});
