import { completed, defineHandler } from '@almanac/delivery';
import { FairQueue, type TenantShare } from '@almanac/domain';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { fairFixtures } from './fair-fixtures';

const noop = defineHandler({ kind: 'noop', timeoutMs: 1000, handle: async () => completed() });

/** Parking beside the pump (fair-lines.ts parkAside): what a review of it found. */
describe('fair lines park beside their pump', () => {
  let h: DeliveryHarness;
  let fx: ReturnType<typeof fairFixtures>;
  const tenant = (name: string, share?: Partial<TenantShare>) => fx.tenant(name, share);
  const deliveries = (tenantId: number, n: number, mayWait = true) => fx.deliveries(tenantId, n, { mayWait });

  beforeEach(async () => {
    h = await createHarness({ handlers: [noop] });
    fx = fairFixtures(h);
  });
  afterEach(() => destroyHarness(h));

  it('a shutdown waits until rows refilled into a line are parked again (they have no hot job to wait for them)', async () => {
    const parked = await tenant('parked');
    const busy = await tenant('busy');
    const backlog = await deliveries(parked, 10, false);
    await h.dispatcher.dispatch(backlog); // no worker yet: all ten parked
    await h.liveWorker({ concurrency: 1 }); // room 2
    const line = await deliveries(busy, 4);
    await h.dispatcher.dispatch(line); // two handed off, two wait: the pool is busy
    const waiting = h.dispatcher.waitForRoom('default', line.slice(2));
    expect(await h.dispatcher.refillOnce()).toBe(10); // out of the backlog, into the busy pool's line
    const blocker = await fx.lockBacklog();
    try {
      h.dispatcher.stopWaiting();
      let settled = false;
      const done = h.dispatcher.settled().then(() => (settled = true));
      // The lines' INSERT is waiting for the lock: the pumps are done, the parking is not.
      await fx.insertsWaiting(1);
      expect(settled).toBe(false);
      await blocker.commitTransaction();
      await done;
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
    }
    await waiting;
    expect(new Set(await h.parkedIds())).toEqual(new Set([...backlog, ...line.slice(2)].map((d) => d.id)));
  });

  it('a row a limit refused is parked, not failed, when the hand-off of the others fails', async () => {
    const capped = await tenant('capped', { maxConcurrency: 1 });
    await h.liveWorker({ concurrency: 2 }); // room 4
    await h.dispatcher.observe();
    const [a, b] = await deliveries(capped, 2);
    await h.dispatcher.dispatch([a, b]); // limited: both through the line's gate
    jest.spyOn(h.ready, 'push').mockRejectedValueOnce(new Error('redis is down'));
    const [first, second] = [h.dispatcher.waitForRoom('default', [a]), h.dispatcher.waitForRoom('default', [b])];
    await expect(first).rejects.toThrow('redis is down'); // granted, then its hand-off failed
    expect(await second).toEqual(['parked']); // refused by the cap: its parking decides (it was failed too)
    expect(await h.parkedIds()).toEqual([b.id]);
    expect(h.dispatcher.waitingCount).toBe(0);
  });

  it('a flow whose rows are being parked has its new rows parked behind them before the INSERT lands', async () => {
    const capped = await tenant('capped', { maxConcurrency: 1 });
    await h.liveWorker({ concurrency: 2 });
    await h.dispatcher.observe();
    const [a, b, c] = await deliveries(capped, 3);
    await h.dispatcher.dispatch([a, b]);
    const blocker = await fx.lockBacklog();
    try {
      const outcomes = Promise.all([h.dispatcher.waitForRoom('default', [a]), h.dispatcher.waitForRoom('default', [b])]);
      // b is refused by the cap and being parked (its INSERT waits for the lock); c comes next.
      for (let i = 0; i < 100 && (await h.readyIds()).length === 0; i++) await new Promise((r) => setImmediate(r));
      const answer = h.dispatcher.dispatch([c]);
      await blocker.commitTransaction();
      expect(await answer).toEqual([{ status: 'parked', pool: 'default' }]); // before: 'full', ahead of b
      expect((await outcomes).flat()).toEqual(['handed_off', 'parked']);
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
    }
    h.dispatcher.stopWaiting();
  });

  it('a full pool with no light tenant joining is not searched for one at every poll', async () => {
    const heavy = await tenant('heavy');
    await h.liveWorker({ concurrency: 2 }); // room 4, and nothing takes
    const burst = await deliveries(heavy, 10);
    await h.dispatcher.dispatch(burst);
    const rooms = jest.spyOn(h.dispatcher['o'].room, 'rooms');
    const takes = jest.spyOn(FairQueue.prototype, 'take');
    const waiting = h.dispatcher.waitForRoom('default', burst.slice(4));
    while (rooms.mock.calls.length < 10) await new Promise((r) => setImmediate(r)); // ten pump turns, room 0 each
    expect(takes.mock.calls.length).toBeLessThanOrEqual(1); // the heavy tenant's first job joined light: one look
    h.dispatcher.stopWaiting();
    await waiting;
  });
});
