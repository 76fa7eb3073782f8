import { HOST_AHEAD_TRUSTED_MS } from '@almanac/platform';
import { noopHandler } from '@almanac/testing/built-in-kinds';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { SkewedClock } from '@almanac/testing/skewed-clock';

describe('a dispatcher whose clock is off', () => {
  let h: DeliveryHarness | undefined;
  afterEach(() => destroyHarness(h));

  // BullMQ takes a delayed envelope out by the host's own clock (Date.now), which no test can
  // skew; an envelope enqueued by a clock 5 s fast comes out 5 s early just the same. A slow
  // host's envelopes come out late, which no dispatcher can undo (docs/architecture.md, Known gaps).
  it('5 s fast, hands an envelope that comes out early over at once (its row waits in the pool) and sends nothing back stamped by its own clock', async () => {
    const fast = new SkewedClock(5000);
    h = await createHarness({ handlers: [noopHandler], clock: fast, dispatcherClock: fast });
    // Its once-a-second look also reads the database's clock (a reading over 200 ms is not taken).
    for (let look = 0; look < 20 && Math.abs(h.dispatcherTime.skewMs + 5000) > 200; look++) await h.observer.runOnce();
    const handOff = h.dispatcher.handOff.bind(h.dispatcher);
    const handed = new Promise<number>((resolve) =>
      jest.spyOn(h!.dispatcher, 'handOff').mockImplementation(async (...args) => {
        await handOff(...args);
        resolve(Date.now());
      }),
    );
    const dueMs = Date.now() + 5600;
    const [id] = await h.enqueue([{ kind: 'noop', runAt: new Date(dueMs) }]); // out of BullMQ ~0.5 s from now
    h.hot.start();
    // Sent back, it came out stamped by the host's clock: 5 s late once that clock was set right
    // (the chaos bench's clock-skew-dispatcher+5s). Handed over, it waits in the pool until due.
    expect((await handed) - dueMs).toBeLessThan(-3000);
    expect(await h.hotIds('delayed')).toEqual([]);
    expect(await h.readyIds()).toEqual([id]);
  });

  it('60 s fast, trusts its clock only HOST_AHEAD_TRUSTED_MS ahead: a row due later goes back, to come out that long before due', async () => {
    const fast = new SkewedClock(60_000);
    h = await createHarness({ handlers: [noopHandler], clock: fast, dispatcherClock: fast });
    for (let look = 0; look < 20 && Math.abs(h.dispatcherTime.skewMs + 60_000) > 200; look++) await h.observer.runOnce();
    const handOff = jest.spyOn(h.dispatcher, 'handOff');
    const dueMs = Date.now() + 61_600;
    await h.enqueue([{ kind: 'noop', runAt: new Date(dueMs) }]); // out of BullMQ 60 s early, as on such a host
    const [early] = await h.hotQueue.queue.getDelayed();
    await early.promote();
    expect(await h.hot.runOnce()).toBe(0);
    expect(handOff).not.toHaveBeenCalled();
    // Stamped HOST_AHEAD_TRUSTED_MS behind BullMQ's clock (the host's), it comes out that long
    // before due by the host's clock: here, where BullMQ's clock is the database's, due − 10 s.
    const [resent] = await h.hotQueue.queue.getDelayed();
    expect(Math.abs(resent.timestamp + (resent.opts.delay ?? 0) - (dueMs - HOST_AHEAD_TRUSTED_MS))).toBeLessThan(300);
  });
});
