import { ReadyQueues } from '@almanac/delivery';
import { LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { completed, defineHandler } from '@almanac/kinds';
import { SweepsRepository } from '@almanac/persistence';
import { within } from '@almanac/platform';
import type { DeliveryHarness, WorkerRig } from './delivery-harness';

/**
 * What the pool taker's specs (libs/worker-runtime/src/pool-taker.*.spec.ts) share: handlers
 * that log their runs and wait for the test, a log of the take loop's calls to Redis, and the
 * copies of a running row they set up. The log is cleared after each test (clearTakeLog).
 */

/** What the take loop did, in order: `ran <id>`, `take done <ids>`, `woke` / `timed out` (a blocking wait answered). */
export const events: { what: string; atMs: number }[] = [];
export const record = (what: string) => void events.push({ what, atMs: Date.now() });
const runs = new Map<string, () => void>();
const loggedHandler = defineHandler<unknown>({
  kind: 'logged',
  timeoutMs: 5000,
  handle: async (ctx) => {
    record(`ran ${ctx.jobId}`);
    runs.get(ctx.jobId)?.();
    return completed();
  },
});

/** Runs until its job's gate opens; `gated`, limited to one at a time, and `held`, not limited, in the specs. */
export const gates = new Map<string, Promise<void>>();
const gatedHandlers = ['gated', 'held'].map((kind) =>
  defineHandler<unknown>({
    kind,
    timeoutMs: 60_000,
    handle: async (ctx) => {
      record(`ran ${ctx.jobId}`);
      runs.get(ctx.jobId)?.();
      await gates.get(ctx.jobId);
      record(`returned ${ctx.jobId}`);
      return completed();
    },
  }),
);

/** The handlers every pool taker spec's harness registers. */
export const takerHandlers = [loggedHandler, ...gatedHandlers];

export function gate(id: string): () => void {
  let open!: () => void;
  gates.set(id, new Promise<void>((r) => (open = r)));
  return open;
}

export function ran(id: string): Promise<void> {
  return new Promise<void>((r) => runs.set(id, r));
}

/** Forgets the test's events, runs and gates. */
export function clearTakeLog(): void {
  events.length = 0;
  runs.clear();
  gates.clear();
}

/**
 * Records each take (at send, with the ids it reports done), each FINISH (at send and when it
 * landed) and each blocking wait's answer, on the real scripts. `afterTake` runs once a take has
 * answered, before the loop sees the answer; a FINISH is sent once `holdFinish(ids)` resolves.
 */
export function recordTakes(opts: { afterTake?: (done: readonly string[]) => Promise<void>; holdFinish?: (ids: readonly string[]) => Promise<void> | undefined } = {}) {
  const doneWaiters = new Map<string, () => void>();
  let onWoke: (() => void) | undefined;
  const take = ReadyQueues.prototype.take;
  jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
    const done = (args[4] ?? []).map((x) => x.id);
    record(`take done ${done.join(',')}`);
    for (const id of done) doneWaiters.get(id)?.();
    const answer = await take.apply(this, args);
    await opts.afterTake?.(done);
    return answer;
  });
  const finish = ReadyQueues.prototype.finish;
  jest.spyOn(ReadyQueues.prototype, 'finish').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['finish']>) {
    const ids = args[2].map((x) => x.id);
    record(`finish ${ids.join(',')}`);
    for (const id of ids) doneWaiters.get(id)?.();
    await opts.holdFinish?.(ids);
    await finish.apply(this, args);
    record(`finish landed ${ids.join(',')}`);
  });
  const wait = ReadyQueues.prototype.waitForWork;
  jest.spyOn(ReadyQueues.prototype, 'waitForWork').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['waitForWork']>) {
    const woke = await wait.apply(this, args);
    record(woke ? 'woke' : 'timed out');
    if (woke) onWoke?.();
    return woke;
  });
  return {
    doneSent: (id: string) => new Promise<void>((r) => doneWaiters.set(id, r)),
    nextWoke: () => new Promise<void>((r) => (onWoke = r)),
  };
}

/** The index of the take that reported `id` done. */
export function sent(id: string): number {
  return events.findIndex((e) => e.what.startsWith('take done') && e.what.split(' ')[2].split(',').includes(id));
}

export const untilTrue = async (check: () => Promise<boolean>) => {
  while (!(await check())) await new Promise((r) => setImmediate(r));
};

/** Starts a running row on a worker, and a copy of it taken by the same worker, on the harness `on()` gives (each test's own). */
export function copyRuns(on: () => DeliveryHarness) {
  /** A `held` row running (gated) on `w`, started here. */
  async function heldRunning(w: WorkerRig): Promise<{ id: string; openOld: () => void }> {
    const h = on();
    const [id] = await h.enqueue([{ kind: 'held' }]);
    const [openOld, firstRan] = [gate(id), ran(id)];
    await h.startWorker(w);
    await h.hot.runOnce();
    await firstRan;
    return { id, openOld };
  }

  /** A row runs (`held`, gated); a rescue's hint of it is taken by the same worker meanwhile: the run's end gives that copy's entry back. */
  async function runWithCopyTaken(w: WorkerRig): Promise<{ id: string; openOld: () => void }> {
    const h = on();
    const { id, openOld } = await heldRunning(w);
    await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    await h.hotQueue.enqueue([h.hint(id, { kind: 'held' })], new Date());
    await h.hot.runOnce();
    await within(5000, untilTrue(async () => (await h.readyIds()).length === 0), 'the fresh hint taken');
    return { id, openOld };
  }
  return { heldRunning, runWithCopyTaken };
}
