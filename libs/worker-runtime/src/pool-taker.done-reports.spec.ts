import { DEFAULT_SHARE } from '@almanac/domain';
import { TAKE_BLOCK_MS, within } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { clearTakeLog, events, gate, ran, record, recordTakes, sent, takerHandlers } from '@almanac/testing/pool-taker-rig';

/** The pool taker's reports of finished runs: with the next take, or at once for a run that holds a limit slot, and before close() returns. */
describe('pool taker', () => {
  let h: DeliveryHarness;
  beforeEach(async () => {
    h = await createHarness({ handlers: takerHandlers });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    clearTakeLog();
    await destroyHarness(h);
  });

  it('reports a finished job with the next take, and one that holds a limit slot at once', async () => {
    const takes = recordTakes();
    const w = h.worker();
    await h.startWorker(w);

    const [free] = await h.enqueue([{ kind: 'logged' }]);
    const freeRan = ran(free);
    await h.hot.runOnce();
    await freeRan;

    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 1 }]]));
    const [limited] = await h.enqueue([{ kind: 'logged' }]);
    const limitedDone = takes.doneSent(limited);
    await h.hot.runOnce();
    await limitedDone;
    await w.taker.close(10_000);

    expect([sent(free), sent(limited)]).not.toContain(-1);
    // No take of its own for a job without slots: its id rides with the take a blocking wait's answer starts.
    const afterFreeRan = events.slice(events.findIndex((e) => e.what === `ran ${free}`), sent(free)).map((e) => e.what);
    expect(afterFreeRan).toEqual(expect.arrayContaining([expect.stringMatching(/^(woke|timed out)$/)]));
    // A slot another worker may wait for is freed as the run ends, not when the blocking wait runs out.
    const [limitedRan, limitedSent] = [events[sent(limited) - 1], events[sent(limited)]];
    expect(limitedRan.what).toBe(`ran ${limited}`);
    expect(limitedSent.atMs - limitedRan.atMs).toBeLessThan(TAKE_BLOCK_MS / 2);
    for (const id of [free, limited]) expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('shutting down, frees the limit slot of a job that ends while another still runs, and returns once that landed', async () => {
    let openFinish!: () => void;
    const finishHeld = new Promise<void>((r) => (openFinish = r));
    let limited = '';
    const takes = recordTakes({ holdFinish: (ids) => (ids.includes(limited) ? finishHeld : undefined) });
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, kindLimits: { gated: { concurrency: 1 } } }]]));
    const [first, other] = await h.enqueue([{ kind: 'gated' }, { kind: 'held' }]);
    limited = first;
    const [openLimited, openOther] = [gate(limited), gate(other)];
    const started = Promise.all([ran(limited), ran(other)]);
    const w = h.worker();
    await h.startWorker(w);
    await h.hot.runOnce();
    await started;
    // The slot's FINISH lands only after the last outcome is written: close() must still wait for it.
    const drain = w.executor.drain.bind(w.executor);
    jest.spyOn(w.executor, 'drain').mockImplementation(() => drain().then(() => void setImmediate(openFinish)));

    const closing = w.taker.close(10_000).then((r) => (record('closed'), r));
    const limitedFinished = takes.doneSent(limited);
    openLimited();
    await within(5000, limitedFinished, 'the FINISH of the limited run');
    openOther(); // the slowest handler ends after it
    await closing;

    const at = (what: string) => events.findIndex((e) => e.what === what);
    expect(at(`finish ${limited}`)).toBeLessThan(at(`returned ${other}`));
    expect(events.slice(0, at('closed')).map((e) => e.what)).toContain(`finish landed ${limited}`);
    for (const id of [limited, other]) expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });
});
