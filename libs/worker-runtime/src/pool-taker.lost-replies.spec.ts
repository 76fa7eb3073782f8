import { ReadyQueues } from '@almanac/delivery';
import { TAKE_BLOCK_MS, within } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { clearTakeLog, copyRuns, gates, ran, takerHandlers, untilTrue } from '@almanac/testing/pool-taker-rig';
import { quietProxy } from '@almanac/testing/quiet-proxy';
import { pushHints } from '@almanac/testing/ready-hints';
import IORedis from 'ioredis';

/** The pool taker when Redis's replies do not come: a lane's take connection gone quiet, a take whose reply was lost, and the copies such a take brought. */
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
});
