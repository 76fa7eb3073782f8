import { completed, defineHandler } from '@almanac/delivery';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { noopHandler } from '../handlers';

/**
 * The light lane (LIGHT_LANE_SHARE): each worker keeps slots of its own for a pool's light list,
 * so a light tenant's job starts while every main slot is busy (issue 15).
 */
describe("a pool's light lane", () => {
  let h: DeliveryHarness;
  afterEach(() => destroyHarness(h));

  it('runs a light job while every main slot is busy, and takes nothing else into its slots', async () => {
    let release!: () => void;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const long = defineHandler({
      kind: 'long',
      timeoutMs: 60_000,
      handle: async () => {
        started();
        await new Promise<void>((r) => (release = r));
        return completed();
      },
    });
    h = await createHarness({ handlers: [long, noopHandler] });
    const [busy, waiting] = await h.enqueue([{ kind: 'long' }, { kind: 'noop' }]);
    const [light] = await h.enqueue([{ kind: 'noop' }]);
    const w = await h.liveWorker({ concurrency: 1 }); // one main slot, a light lane of one
    await h.ready.push('default', [{ id: busy, dueMs: Date.now() }, { id: waiting, dueMs: Date.now() }]);
    await h.startWorker(w);
    await running; // the main slot is taken, and `waiting` waits for it
    await h.ready.push('default', [], [], [{ id: light, dueMs: Date.now() }]);
    while ((await h.job(light)).state !== 'd') await new Promise((r) => setImmediate(r));
    expect(await h.job(waiting)).toMatchObject({ state: 'q', attempts: 0 }); // the lane took only its own list
    expect(await h.readyIds()).toEqual([waiting]);
    release();
    while ((await h.job(waiting)).state !== 'd') await new Promise((r) => setImmediate(r));
    await w.taker.close(1000);
  });
});
