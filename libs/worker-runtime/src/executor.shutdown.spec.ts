import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { chargeCount, executorHandlers, gate, renewHandlerState, slowHandlerOn } from '@almanac/testing/executor-rig';

/** This spec's own: a test here starts the slow handler's gate again. */
let slowGate = gate();

/** The worker executor at a graceful shutdown: runs that end before the deadline complete, the others are released with their hints back in their pools. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    slowGate = gate();
    h = await createHarness({ handlers: executorHandlers(slowHandlerOn(() => slowGate)) });
  });
  afterEach(() => destroyHarness(h));

  it('graceful shutdown: a handler still running at the deadline is released to queued, its hint back at the head of its flow', async () => {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker({ workerId: 'leaving' });
    await h.hot.runOnce();
    await h.startWorker(w);
    await slowGate.started;
    const { released } = await w.taker.close(100);
    expect(released).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, lease_until: null });
    expect(await h.attempts(id)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'released', worker_id: 'leaving' })]);
    expect(await h.readyIds()).toEqual([id]);
    slowGate.release(); // the abandoned handler finishing late changes nothing
    await new Promise((r) => setImmediate(r));
    const w2 = h.worker();
    slowGate = gate();
    slowGate.release();
    await h.runWorker(w2);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

  it("a release at shutdown that wins the row from its handler's transaction gives the hint back to its pool", async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: 'inv-4', amountCents: 100 } }]);
    await h.hot.runOnce();
    const w = h.worker();
    // The handler is done; its completion, in its own transaction, waits until the release has landed.
    const finishing = gate();
    const real = h.repo.complete.bind(h.repo);
    jest.spyOn(h.repo, 'complete').mockImplementationOnce(async (...args: Parameters<typeof real>) => {
      finishing.onStart();
      await finishing.released;
      return real(...args);
    });
    const running = h.runWorker(w);
    await finishing.started;
    expect(await w.executor.releaseUnfinished()).toEqual(new Map([['default', [id]]]));
    finishing.release();
    await running;
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1 });
    expect(await chargeCount(h)).toBe(0);
    expect(await h.readyIds()).toEqual([id]); // back in its pool, not waiting for the overdue sweep
  });

  it('graceful shutdown lets a handler that finishes before the deadline complete normally', async () => {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.startWorker(w);
    await slowGate.started;
    const closing = w.taker.close(10_000);
    slowGate.release();
    expect(await closing).toEqual({ released: 0 });
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });
});
