import { DEFAULT_SHARE, LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { SweepsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { chargeHandler } from '@almanac/testing/built-in-kinds';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { chargeCount, executorHandlers, gate, renewHandlerState, slowGate, slowHandler } from '@almanac/testing/executor-rig';
import { pushHints } from '@almanac/testing/ready-hints';

/** The worker executor given two hints of one row, or a stale run of it: the row runs once and a charge is stored once. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  it('stores a charge exactly once when two hints of one row are taken by two workers at the same time', async () => {
    const seed = { kind: 'charge', payload: { invoiceId: 'inv-1', amountCents: 500 } };
    const [id] = await h.enqueue([seed]);
    const a = await h.liveWorker({ workerId: 'a' });
    const b = await h.liveWorker({ workerId: 'b' });
    await h.hot.runOnce();
    // A second hint of the same row (a dispatcher killed after its hand-off, its envelope handed again).
    await pushHints(h.ready, 'default', [h.hint(id, seed)]);
    expect(await h.readyIds()).toEqual([id, id]);
    const [na, nb] = await Promise.all([a.taker.runOnce(1), b.taker.runOnce(1)]);
    expect(na + nb).toBe(2);
    expect(await chargeCount(h)).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1, result: { charged: true } });
    expect(await h.attempts(id)).toHaveLength(1);
  });

  it('two hints of one row claimed in separate claims of one tick run it once: no two claims share a lease', async () => {
    await destroyHarness(h);
    const clock = new ManualClock(Date.now()); // every claim of the tick reads the same millisecond
    h = await createHarness({ handlers: [slowHandler], clock });
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker({ maxBatch: 3 }); // claims of one row each
    await w.heartbeat.runOnce();
    const hint = h.hint(id, { kind: 'slow' });
    const runs = [w.executor.execute('default', hint), w.executor.execute('default', hint)];
    await slowGate.started;
    await w.executor.drain(); // both claims answered while the first run still holds the row
    slowGate.release();
    expect((await Promise.all(runs)).sort()).toEqual(['stale', 'submitted']);
    await w.executor.drain();
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it("runs a row whose hint a take's lost reply left in the worker's taken hash, once the overdue repair hints it again", async () => {
    const seed = { kind: 'noop' };
    const [id] = await h.enqueue([seed]);
    const w = await h.liveWorker();
    await h.hot.runOnce();
    await h.ready.take('default', 10, Date.now(), String(w.identity.id)); // executed, its reply lost: the worker never saw the row
    const row = { id, tenantId: 1, kind: 'noop', dueMs: (await h.job(id)).run_at.getTime() };
    const lost = await h.lostHints().of([row], Date.now() + 60_000);
    await h.hotQueue.enqueue(lost.map((r) => h.hint(r.id, seed)), new Date(), { repair: true }); // the overdue sweep's repair
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('a second copy of a row the worker runs is dropped by the worker: one run, its slot freed once', async () => {
    const [id] = await h.enqueue([{ kind: 'slow', tenantId: 1 }]);
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 2 }]]));
    await h.hot.runOnce();
    const w = h.worker();
    await h.startWorker(w);
    await slowGate.started;
    await h.hotQueue.enqueue([h.hint(id, { kind: 'slow', tenantId: 1 })], new Date(), { repair: true }); // a repair's copy while it runs
    await h.hot.runOnce(); // handed over with the pool's wake token: the worker takes it now
    const slots = `${h.ready.prefix}:almanac:limit:1:c`;
    for (let i = 0; i < 500 && (await h.ready.heads('default', [{ tenantId: 1, kind: 'slow' }]))[0] !== null; i++); // taken (each look is a round trip)
    expect((await h.ready.heads('default', [{ tenantId: 1, kind: 'slow' }]))[0]).toBeNull();
    slowGate.release();
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect(await h.attempts(id)).toHaveLength(1);
    expect((await w.metrics.dropped.get()).values).toEqual([]); // never claimed beside it (a stale claim would free the slot the run holds)
    expect(await h.redis.connection.zcard(slots)).toBe(0);
  });

  it('a hint after completion changes nothing; two copies in one take run at most once', async () => {
    const seed = { kind: 'charge', payload: { invoiceId: 'inv-2', amountCents: 700 } };
    const [id] = await h.enqueue([seed]);
    const w = await h.liveWorker();
    await h.hot.runOnce();
    await h.runWorker(w);
    await pushHints(h.ready, 'default', [h.hint(id, seed)]);
    await h.hotQueue.enqueue([h.hint(id, seed, new Date(Date.now() + 1))], new Date());
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(1); // the second copy is dropped by the take itself
    expect(await chargeCount(h)).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    const drops = Object.fromEntries((await w.metrics.dropped.get()).values.map((v) => [v.labels.reason, v.value]));
    expect(drops).toEqual({ stale: 1 });
  });

  it('a stale worker (attempt rescued and re-run meanwhile) completes nothing and its writes roll back', async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: 'inv-3', amountCents: 900 } }]);
    await h.hot.runOnce();
    const stale = h.worker({ workerId: 'stale' });
    // Hold the first attempt inside its handler transaction: swap in a blocking charge for this worker.
    const blocking = gate();
    const origHandle = chargeHandler.handle;
    const registry = h.registry as unknown as { byKind: Map<string, unknown> };
    registry.byKind.set('charge', {
      ...chargeHandler,
      handle: async (ctx: Parameters<typeof origHandle>[0], p: Parameters<typeof origHandle>[1]) => {
        const out = await origHandle(ctx, p);
        blocking.onStart();
        await blocking.released;
        return out;
      },
    });
    const running = h.runWorker(stale);
    await blocking.started;
    // Its worker is taken for dead: the rescue moves the row back to queued (a `lost` attempt) and it is handed out again.
    const rescue = await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [stale.identity.id]);
    expect(rescue.requeued.map((r) => r.id)).toEqual([id]);
    await h.hotQueue.enqueue(rescue.requeued, new Date());
    await h.hot.runOnce();
    registry.byKind.set('charge', chargeHandler);
    const fresh = h.worker({ workerId: 'fresh' });
    // The fresh attempt's insert waits on the stale transaction's uncommitted row: let the stale one finish first.
    blocking.release();
    await running;
    await h.runWorker(fresh);
    expect(await chargeCount(h)).toBe(1);
    const [charge] = await h.ds.query(`SELECT job_id::text AS job_id FROM charges`);
    expect(charge.job_id).toBe(id);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
    const attempts = await h.attempts(id);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.worker_id])).toEqual([[1, 'lost', null], [2, 'succeeded', 'fresh']]);
    expect((await stale.metrics.dropped.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'stale_completion' }, value: 1 })]);
  });
});
