import { ReadyQueues } from '@almanac/delivery';
import { DEFAULT_SHARE, LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { SweepsRepository } from '@almanac/persistence';
import { completed, defineHandler } from '@almanac/kinds';
import { TAKE_BLOCK_MS, within } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness, type WorkerRig } from '@almanac/testing/delivery-harness';
import { quietProxy } from '@almanac/testing/quiet-proxy';
import { pushHints } from '@almanac/testing/ready-hints';
import IORedis from 'ioredis';

/** What the take loop did, in order: `ran <id>`, `take done <ids>`, `woke` / `timed out` (a blocking wait answered). */
const events: { what: string; atMs: number }[] = [];
const record = (what: string) => void events.push({ what, atMs: Date.now() });
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

/** Runs until its job's gate opens; `gated`, limited to one at a time, and `held`, not limited, in the tests below. */
const gates = new Map<string, Promise<void>>();
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

function gate(id: string): () => void {
  let open!: () => void;
  gates.set(id, new Promise<void>((r) => (open = r)));
  return open;
}

function ran(id: string): Promise<void> {
  return new Promise<void>((r) => runs.set(id, r));
}

/**
 * Records each take (at send, with the ids it reports done), each FINISH (at send and when it
 * landed) and each blocking wait's answer, on the real scripts. `afterTake` runs once a take has
 * answered, before the loop sees the answer; a FINISH is sent once `holdFinish(ids)` resolves.
 */
function recordTakes(opts: { afterTake?: (done: readonly string[]) => Promise<void>; holdFinish?: (ids: readonly string[]) => Promise<void> | undefined } = {}) {
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
function sent(id: string): number {
  return events.findIndex((e) => e.what.startsWith('take done') && e.what.split(' ')[2].split(',').includes(id));
}

describe('pool taker', () => {
  let h: DeliveryHarness;
  beforeEach(async () => {
    h = await createHarness({ handlers: [loggedHandler, ...gatedHandlers] });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    events.length = 0;
    runs.clear();
    gates.clear();
    await destroyHarness(h);
  });

  it('connects a lane again when its take connection goes quiet (its Redis host lost), and takes on', async () => {
    const proxy = await quietProxy(h.redis.connection.options.port ?? 6379);
    const conn = new IORedis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    conn.on('error', () => undefined);
    try {
      const w = h.worker({ takerConnection: conn });
      await h.startWorker(w);
      for (let i = 0; i < 1000 && proxy.opened < 3; i++) await h.redis.connection.ping(); // its own, and the lane's blocking and take connections
      const [first, second] = await h.enqueue([{ kind: 'logged' }, { kind: 'logged', runAt: new Date(Date.now() + 3_600_000) }]);
      const firstRan = ran(first);
      await h.hot.runOnce();
      await firstRan; // taken on the lane's own connections
      proxy.quiet();
      await h.ds.query(`UPDATE jobs SET run_at = now() WHERE id = $1`, [second]);
      await h.hotQueue.enqueue([h.hint(second, { kind: 'logged' })], new Date());
      const secondRan = ran(second);
      await h.hot.runOnce();
      await secondRan; // without a bound, the take on the quiet connection waited for TCP to give up (hours)
      await w.taker.close(10_000);
      expect(await h.job(second)).toMatchObject({ state: 'd', attempts: 1 });
    } finally {
      conn.disconnect();
      await proxy.close();
    }
  });

  it("gives back what a take whose reply was lost took, before its next take: the row runs without the overdue sweep", async () => {
    const take = ReadyQueues.prototype.take;
    let lose = true;
    jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
      const answer = await take.apply(this, args);
      if (!lose || answer.hints.length === 0) return answer;
      lose = false;
      throw new Error('Connection is closed.'); // the take ran in Redis; its reply never came
    });
    const w = h.worker();
    await h.startWorker(w);
    const [id] = await h.enqueue([{ kind: 'logged' }]);
    const idRan = ran(id);
    await h.hot.runOnce();
    await within(TAKE_BLOCK_MS * 3, idRan, 'the run after the lost take'); // without the give-back: the overdue sweep's grace, 30 s
    await w.taker.close(10_000);
    expect(lose).toBe(false);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect(await h.redis.connection.hlen(`${h.ready.base('default')}:taken:${w.identity.id}`)).toBe(0);
  });

  it('a worker stopping right after a take whose reply was lost gives back what it took: no rescue follows a worker that leaves', async () => {
    const take = ReadyQueues.prototype.take;
    let lost!: () => void;
    const tookAndLost = new Promise<void>((r) => (lost = r));
    jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
      const answer = await take.apply(this, args);
      if (answer.hints.length === 0) return answer;
      lost();
      throw new Error('Connection is closed.');
    });
    const w = h.worker();
    await h.startWorker(w);
    const [id] = await h.enqueue([{ kind: 'logged' }]);
    await h.hot.runOnce();
    await within(5000, tookAndLost, 'the lost take');
    await w.taker.close(10_000);
    expect(await h.redis.connection.hlen(`${h.ready.base('default')}:taken:${w.identity.id}`)).toBe(0);
    expect(await h.readyIds()).toEqual([id]); // back in its pool for another worker
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

  it('takes at once the work a token announced to a blocking wait the loop had stopped racing', async () => {
    // Each run holds a limit slot, so its end wakes the loop to report it while its blocking wait
    // is still out; the next push lands just after that take, and the wait left behind gets its token.
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 5 }]]));
    const [first] = await h.enqueue([{ kind: 'logged' }]);
    let second: { id: string; pushedAtMs: number; ran: Promise<void> } | undefined;
    let secondPushed!: () => void;
    const pushed = new Promise<void>((r) => (secondPushed = r));
    const takes = recordTakes({ afterTake: async (done) => {
      if (!done.includes(first) || second) return;
      const [id] = await h.enqueue([{ kind: 'logged' }]);
      const woke = takes.nextWoke();
      second = { id, pushedAtMs: Date.now(), ran: ran(id) };
      await h.hot.runOnce();
      await within(TAKE_BLOCK_MS, woke, 'the wait left behind answering with the push'); // it took the token
      secondPushed();
    } });
    const w = h.worker();
    await h.startWorker(w);
    await h.hot.runOnce();
    await within(5000, pushed, 'the second push');
    await within(5000, second!.ran, 'the second run');
    await w.taker.close(10_000);

    const secondRan = events.find((e) => e.what === `ran ${second!.id}`)!;
    expect(secondRan.atMs - second!.pushedAtMs).toBeLessThan(TAKE_BLOCK_MS / 2);
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

  it("a rescue's fresh hint taken by the same worker while its old run still ends runs after it, not dropped with the old run's FINISH", async () => {
    const w = h.worker();
    const { id, openOld } = await runWithCopyTaken(w);
    gates.set(id, Promise.resolve()); // the second run does not wait
    openOld(); // the old run ends; its completion is stale
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the fresh hint run');
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

  /** A `held` row running (gated) on `w`, started here. */
  async function heldRunning(w: WorkerRig): Promise<{ id: string; openOld: () => void }> {
    const [id] = await h.enqueue([{ kind: 'held' }]);
    const [openOld, firstRan] = [gate(id), ran(id)];
    await h.startWorker(w);
    await h.hot.runOnce();
    await firstRan;
    return { id, openOld };
  }

  /** A row runs (`held`, gated); a rescue's hint of it is taken by the same worker meanwhile: the run's end gives that copy's entry back. */
  async function runWithCopyTaken(w: WorkerRig): Promise<{ id: string; openOld: () => void }> {
    const { id, openOld } = await heldRunning(w);
    await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    await h.hotQueue.enqueue([h.hint(id, { kind: 'held' })], new Date());
    await h.hot.runOnce();
    await within(5000, untilTrue(async () => (await h.readyIds()).length === 0), 'the fresh hint taken');
    return { id, openOld };
  }
  const untilTrue = async (check: () => Promise<boolean>) => {
    while (!(await check())) await new Promise((r) => setImmediate(r));
  };

  it('a copy taken under a limit the run did not have renews the slot it took while the run goes on', async () => {
    const w = h.worker();
    const { id, openOld } = await heldRunning(w); // taken with no limit
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, kindLimits: { held: { concurrency: 1 } } }]]));
    await pushHints(h.ready, 'default', [h.hint(id, { kind: 'held' })]); // a repair's copy, taken by the same worker
    await within(5000, untilTrue(async () => (await h.readyIds()).length === 0), 'the copy taken');
    const [slots, member] = [`${h.ready.base('default')}:limit:1:held:c`, `${id}@${w.identity.id}`];
    await h.redis.connection.zadd(slots, 'XX', 1, member); // as if about to expire
    await w.taker.renewSlots();
    expect(Number(await h.redis.connection.zscore(slots, member))).toBeGreaterThan(Date.now()); // was left to expire mid-run
    gates.set(id, Promise.resolve());
    openOld();
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the run done');
    expect(await h.redis.connection.zscore(slots, member)).toBeNull();
    await w.taker.close(10_000);
  });

  it('a copy taken again once the give-back of the run\'s copy landed, before its reply, runs: not left to the overdue sweep', async () => {
    const w = h.worker();
    const { id, openOld } = await runWithCopyTaken(w);
    // The give-back lands (the row back in its pool, a wake token); its reply waits until the loop took the row again.
    let tookAgain!: () => void;
    const retaken = new Promise<void>((r) => (tookAgain = r));
    const take = ReadyQueues.prototype.take;
    jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
      const answer = await take.apply(this, args);
      if (answer.hints.some((x) => x.id === id)) tookAgain();
      return answer;
    });
    const giveBack = ReadyQueues.prototype.giveBack;
    jest.spyOn(ReadyQueues.prototype, 'giveBack').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['giveBack']>) {
      const back = await giveBack.apply(this, args);
      await within(5000, retaken, 'the row taken again');
      await new Promise((r) => setImmediate(r)); // the loop has seen that take
      return back;
    });
    gates.set(id, Promise.resolve()); // the copy's run does not wait
    openOld();
    // Dropped as a second copy of the run, the row had no hint left and nothing ran it: the overdue sweep's grace, 30-60 s.
    await within(3 * TAKE_BLOCK_MS, untilTrue(async () => (await h.job(id)).state === 'd'), 'the copy taken again run');
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

  it("a give-back landing after the worker took and started another copy of the row leaves that copy's entry and limit slot", async () => {
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 2 }]]));
    const w = h.worker();
    const { id, openOld } = await runWithCopyTaken(w);
    const [openCopy, copyRan] = [gate(id), ran(id)];
    let givingBack!: () => void;
    const gaveBackSent = new Promise<void>((r) => (givingBack = r));
    let lateBack: string[] | undefined;
    const giveBack = ReadyQueues.prototype.giveBack;
    jest.spyOn(ReadyQueues.prototype, 'giveBack').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['giveBack']>) {
      givingBack();
      await within(5000, copyRan, 'the copy running'); // lands only after it
      return (lateBack = await giveBack.apply(this, args));
    });
    openOld();
    await within(5000, gaveBackSent, "the old run's give-back");
    await pushHints(h.ready, 'default', [h.hint(id, { kind: 'held' })]); // a repair's copy, taken while that give-back is out
    await within(3 * TAKE_BLOCK_MS, copyRan, 'the copy taken while the give-back is out running');
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'r'), 'the copy claimed');
    await within(5000, untilTrue(async () => w.taker.runningIn('default') === 1), 'the old run settled'); // its give-back landed
    expect(lateBack).toEqual([]); // it pushed back (and freed the slot of) no entry: the copy's is not the take it names
    expect(await h.readyIds()).toEqual([]);
    expect(await h.redis.connection.hkeys(`${h.ready.base('default')}:taken:${w.identity.id}`)).toEqual([id]);
    expect(await h.redis.connection.zcard(`${h.ready.prefix}:almanac:limit:1:c`)).toBe(1); // its slot still held
    openCopy();
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the copy done');
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

  /** Loses the reply of the first take that brings a row taken before: a copy of a row this worker runs, which it never sees. */
  function loseCopyTake(): void {
    const [take, seen] = [ReadyQueues.prototype.take, new Set<string>()];
    let lost = false;
    jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
      const answer = await take.apply(this, args);
      if (!lost && answer.hints.some((x) => seen.has(x.id))) {
        lost = true;
        throw new Error('Connection is closed.'); // the take ran in Redis; its reply never came
      }
      for (const x of answer.hints) seen.add(x.id);
      return answer;
    });
  }
  /** Resolves once the give-back of what a lost take took has landed. */
  function lostTakeGivenBack(): Promise<void> {
    const giveBack = ReadyQueues.prototype.giveBack;
    return new Promise<void>((landed) =>
      jest.spyOn(ReadyQueues.prototype, 'giveBack').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['giveBack']>) {
        const back = await giveBack.apply(this, args);
        if (typeof args[2] === 'object' && 'except' in args[2]) landed();
        return back;
      }),
    );
  }

  it("a copy a lost take brought of a row the worker runs runs after the run ends stale, not swallowed by the run's done", async () => {
    loseCopyTake();
    const givenBack = lostTakeGivenBack();
    const w = h.worker();
    const { id, openOld } = await runWithCopyTaken(w); // taken in the lost take
    await within(5000, givenBack, 'the lost take given back');
    gates.set(id, Promise.resolve()); // the copy's run does not wait
    openOld(); // its completion is stale: the rescue moved the row back to queued
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the copy run'); // else the overdue sweep's grace, 30-60 s
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

  it("a copy a lost take brought of a row the worker runs goes back to its pool with the run released at shutdown, not stranded in the taken hash", async () => {
    loseCopyTake();
    const givenBack = lostTakeGivenBack();
    const w = h.worker();
    const { id, openOld } = await heldRunning(w);
    await pushHints(h.ready, 'default', [h.hint(id, { kind: 'held' })]); // a repair's copy, taken in the lost take
    await within(5000, givenBack, 'the lost take given back');
    const closing = w.taker.close(50);
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'q'), 'the run released');
    openOld();
    expect(await closing).toEqual({ released: 1 });
    expect(await h.redis.connection.hlen(`${h.ready.base('default')}:taken:${w.identity.id}`)).toBe(0);
    expect(await h.readyIds()).toContain(id); // for another worker; else the overdue sweep's grace, 30-60 s
  });

  it("a run's done, sent after a take that brought a copy of its row which then started, leaves that copy's entry and limit slot", async () => {
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 2 }]]));
    const w = h.worker();
    const { id, openOld } = await heldRunning(w);
    let copyTaken = false;
    let doneSent!: () => void;
    const oldDoneSent = new Promise<void>((r) => (doneSent = r));
    let [openCopy, copyRan] = [() => undefined as void, Promise.resolve()];
    const take = ReadyQueues.prototype.take;
    jest.spyOn(ReadyQueues.prototype, 'take').mockImplementation(async function (this: ReadyQueues, ...args: Parameters<ReadyQueues['take']>) {
      const answer = await take.apply(this, args);
      if (copyTaken && (args[4] ?? []).some((x) => x.id === id)) doneSent();
      if (copyTaken || !answer.hints.some((x) => x.id === id)) return answer;
      copyTaken = true; // the old run ends before this answer is in: its done goes with the next take
      openOld();
      await within(5000, untilTrue(async () => w.taker.runningIn('default') === 0), 'the old run settled');
      [openCopy, copyRan] = [gate(id), ran(id)];
      return answer;
    });
    await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    await h.hotQueue.enqueue([h.hint(id, { kind: 'held' })], new Date());
    await h.hot.runOnce();
    await within(5000, oldDoneSent, "the old run's done sent with a take");
    await within(5000, copyRan, 'the copy running');
    expect(await h.redis.connection.hkeys(`${h.ready.base('default')}:taken:${w.identity.id}`)).toEqual([id]); // the copy's entry
    expect(await h.redis.connection.zcard(`${h.ready.prefix}:almanac:limit:1:c`)).toBe(1); // its slot
    openCopy();
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the copy done');
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

  it('a copy taken under the id the worker registered again with, of a row both ids run, goes back with the run under that id', async () => {
    const [id] = await h.enqueue([{ kind: 'held' }]);
    const [openFirst, firstRan] = [gate(id), ran(id)];
    const w = h.worker();
    await h.startWorker(w);
    await h.hot.runOnce();
    await firstRan;
    // Taken for dead: its rows queued again, its taken hash given back; it registers under a new id and takes the row again.
    const [sweeps, oldId] = [new SweepsRepository(h.ds), w.identity.id];
    await sweeps.rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [oldId]);
    await h.ready.giveBack('default', String(oldId), 'all');
    await w.identity.register();
    const [openSecond, secondRan] = [gate(id), ran(id)];
    await h.hotQueue.enqueue([h.hint(id, { kind: 'held' })], new Date());
    await h.hot.runOnce();
    await within(3 * TAKE_BLOCK_MS, secondRan, 'the run under the new id');
    // That run's lease lost too: the rescue's fresh hint is taken under the new id, a copy of a row it runs.
    await sweeps.rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    await h.hotQueue.enqueue([h.hint(id, { kind: 'held' })], new Date());
    await h.hot.runOnce();
    await within(5000, untilTrue(async () => (await h.readyIds()).length === 0), 'the copy taken');
    gates.set(id, Promise.resolve()); // the copy's run does not wait
    openFirst(); // the run under the old id ends (stale): the copy is not its
    await within(5000, untilTrue(async () => w.taker.runningIn('default') === 1), 'the first run settled');
    openSecond();
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the copy run'); // else the overdue sweep's grace, 30-60 s
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 3 });
  });

  it('a full lane passes on a token that a wait it left behind took', async () => {
    // A rate limit makes the loop's timer, not its wait, start the take that fills the lane: the
    // wait is still out when the next push comes, and this worker has no slot for that work.
    const takes = recordTakes();
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, kindLimits: { gated: { perSecond: 5 } } }]]));
    const [one, two] = await h.enqueue([{ kind: 'gated' }, { kind: 'gated' }]);
    const opens = [gate(one), gate(two)];
    const bothRan = Promise.all([ran(one), ran(two)]);
    const w = h.worker({ concurrency: 2 });
    await h.startWorker(w);
    await h.hot.runOnce();
    await within(5000, bothRan, 'both rate-limited runs'); // the second 200 ms after the first, taken on the timer

    await h.enqueue([{ kind: 'logged' }]);
    const woke = takes.nextWoke();
    await h.hot.runOnce();
    await within(TAKE_BLOCK_MS, woke, 'the wait left behind answering with the push');
    const wake = `${h.ready.base('default')}:wake`;
    const passedOn = (async () => {
      while ((await h.redis.connection.llen(wake)) === 0) await new Promise((r) => setImmediate(r));
    })();
    await within(2000, passedOn, 'the token passed on');
    expect(events.filter((e) => e.what.startsWith('ran ')).map((e) => e.what)).toEqual([`ran ${one}`, `ran ${two}`]); // nothing more: the lane is full
    for (const open of opens) open();
    await w.taker.close(10_000);
  });

  it('a stopping worker that keeps the pool timer hands it on, and leaves the token for another worker, not its own last wait', async () => {
    let [takes, secondTake] = [0, () => undefined as void];
    const tookTwice = new Promise<void>((r) => (secondTake = r));
    recordTakes({ afterTake: async () => void (++takes === 2 && secondTake()) });
    // The push leaves a token: the first wait takes it, so the wait after the second take blocks.
    await pushHints(h.ready, 'default', [{ id: '999000001', tenantId: 1, kind: 'logged', dueMs: Date.now() + 60_000 }]);
    const w = h.worker();
    await h.startWorker(w);
    await tookTwice;
    const timer = `${h.ready.base('default')}:timer`;
    expect(await h.redis.connection.get(timer)).toMatch(new RegExp(`^${w.identity.id}:`));
    await w.taker.close(10_000);
    expect(await h.redis.connection.exists(timer)).toBe(0);
    expect(await h.redis.connection.llen(`${h.ready.base('default')}:wake`)).toBe(1);
  });
});
