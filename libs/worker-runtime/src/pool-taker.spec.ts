import { ReadyQueues } from '@almanac/delivery';
import { DEFAULT_SHARE } from '@almanac/domain';
import { completed, defineHandler } from '@almanac/kinds';
import { TAKE_BLOCK_MS } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';

/** What the take loop did, in order: `ran <id>`, `take done <ids>`, `woke` / `timed out` (its blocking wait answered). */
const events: { what: string; atMs: number }[] = [];
const record = (what: string) => void events.push({ what, atMs: Date.now() });
const ran = new Map<string, () => void>();
const loggedHandler = defineHandler<unknown>({
  kind: 'logged',
  timeoutMs: 5000,
  handle: async (ctx) => {
    record(`ran ${ctx.jobId}`);
    ran.get(ctx.jobId)?.();
    return completed();
  },
});

/** Records each take (at send, with the ids it reports done) and each blocking wait's answer, on the real scripts. */
function recordTakes(): { doneSent: (id: string) => Promise<void> } {
  const waiters = new Map<string, () => void>();
  const take = ReadyQueues.prototype.take;
  jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
    const done = args[4] ?? [];
    record(`take done ${done.join(',')}`);
    for (const id of done) waiters.get(id)?.();
    return take.apply(this, args);
  });
  const wait = ReadyQueues.prototype.waitForWork;
  jest.spyOn(ReadyQueues.prototype, 'waitForWork').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['waitForWork']>) {
    const woke = await wait.apply(this, args);
    record(woke ? 'woke' : 'timed out');
    return woke;
  });
  return { doneSent: (id) => new Promise<void>((r) => waiters.set(id, r)) };
}

function runOf(id: string): Promise<void> {
  return new Promise<void>((r) => ran.set(id, r));
}

describe('pool taker', () => {
  let h: DeliveryHarness;
  afterEach(async () => {
    jest.restoreAllMocks();
    events.length = 0;
    ran.clear();
    await destroyHarness(h);
  });

  it('reports a finished job with the next take, and one that holds a limit slot at once', async () => {
    h = await createHarness({ handlers: [loggedHandler] });
    const takes = recordTakes();
    const w = h.worker();
    await h.startWorker(w);

    const [free] = await h.enqueue([{ kind: 'logged' }]);
    const freeRan = runOf(free);
    await h.hot.runOnce();
    await freeRan;

    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 1 }]]));
    const [limited] = await h.enqueue([{ kind: 'logged' }]);
    const limitedDone = takes.doneSent(limited);
    await h.hot.runOnce();
    await limitedDone;
    await w.taker.close(10_000);

    const sent = (id: string) => events.findIndex((e) => e.what.startsWith('take done') && e.what.split(' ')[2].split(',').includes(id));
    // No take of its own for a job without slots: its id rides with the take the next push wakes.
    expect(events[sent(free) - 1].what).toBe('woke');
    // A slot another worker may wait for is freed as the run ends, not when the blocking wait runs out.
    const [limitedRan, limitedSent] = [events[sent(limited) - 1], events[sent(limited)]];
    expect(limitedRan.what).toBe(`ran ${limited}`);
    expect(limitedSent.atMs - limitedRan.atMs).toBeLessThan(TAKE_BLOCK_MS / 2);
    for (const id of [free, limited]) expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });
});
