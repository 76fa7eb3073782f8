import { ReadyQueues } from '@almanac/delivery';
import { DEFAULT_SHARE, LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { SweepsRepository } from '@almanac/persistence';
import { TAKE_BLOCK_MS, within } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { clearTakeLog, copyRuns, gate, gates, ran, takerHandlers, untilTrue } from '@almanac/testing/pool-taker-rig';
import { pushHints } from '@almanac/testing/ready-hints';

/** The pool taker given a copy of a row its worker already runs (a rescue's or a repair's hint): each run's end leaves the other's entry and limit slot. */
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
  const { heldRunning, runWithCopyTaken } = copyRuns(() => h);

  it("a rescue's fresh hint taken by the same worker while its old run still ends runs after it, not dropped with the old run's FINISH", async () => {
    const w = h.worker();
    const { id, openOld } = await runWithCopyTaken(w);
    gates.set(id, Promise.resolve()); // the second run does not wait
    openOld(); // the old run ends; its completion is stale
    await within(5000, untilTrue(async () => (await h.job(id)).state === 'd'), 'the fresh hint run');
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
  });

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
    // Freed with the run's done, which the worker sends with its next take or at once (a limited row).
    await within(5000, untilTrue(async () => (await h.redis.connection.zscore(slots, member)) === null), 'the slot freed');
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
});
