import { LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { completed, defineHandler, type HandlerContext } from '@almanac/kinds';
import { createDataSource, SweepsRepository } from '@almanac/persistence';
import { COMPLETION_LINGER_MS, HEARTBEAT_MS, ManualClock, WaitTimeoutError, within } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { answerByNow, executorHandlers, gate, renewHandlerState } from '@almanac/testing/executor-rig';
import { quietProxy } from '@almanac/testing/quiet-proxy';
import { LeaseLostError } from './handler-run';

let listening = gate();
let listeningCtx: HandlerContext | undefined;
/** Runs until its signal aborts, and fails with the signal's reason. */
const listeningHandler = defineHandler<unknown>({
  kind: 'listening',
  timeoutMs: 600_000,
  handle: (ctx) => new Promise((_, reject) => {
    listeningCtx = ctx;
    ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
    listening.onStart();
  }),
});

/** The worker executor's runs whose lease is lost (rescued, or not renewed in time): aborted with LeaseLostError, their outcome stale. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    listening = gate();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  /** A fresh harness on a manual clock (renewals come due when the test says) with one `listening` run started. */
  async function listeningRunOnManualClock() {
    await destroyHarness(h);
    const clock = new ManualClock(Date.now());
    h = await createHarness({ handlers: [listeningHandler], clock });
    const [id] = await h.enqueue([{ kind: 'listening' }]);
    await h.hot.runOnce();
    const w = h.worker();
    const running = h.runWorker(w);
    await listening.started;
    return { clock, id, w, running };
  }

  it("two runs of one row ending in one group commit: the newer attempt's outcome is recorded, the rescued one's is stale", async () => {
    await destroyHarness(h);
    const opens: (() => void)[] = [];
    const waitingHandler = defineHandler<unknown>({ kind: 'waiting', timeoutMs: 60_000, handle: () => new Promise((r) => opens.push(() => r(completed()))) });
    h = await createHarness({ handlers: [waitingHandler] });
    const [id] = await h.enqueue([{ kind: 'waiting' }]);
    await h.hot.runOnce();
    const w = h.worker();
    const first = h.runWorker(w);
    await within(5000, (async () => { while (opens.length < 1) await new Promise((r) => setImmediate(r)); })(), 'the first run');
    // Its lease lost (the rescue), the same worker claims the row again: a second run beside the first.
    await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    const second = w.executor.execute('default', h.hint(id, { kind: 'waiting' }));
    await within(5000, (async () => { while (opens.length < 2) await new Promise((r) => setImmediate(r)); })(), 'the second run');
    for (const open of opens) open(); // the older outcome first, both within one linger
    await Promise.all([first, second]);
    await w.executor.drain();
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 }); // not left running until its lease ends and run a third time
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['lost', 'succeeded']);
  });

  it('a run whose row was rescued meanwhile has its signal aborted with LeaseLostError at the next renewal', async () => {
    const { clock, id, w, running } = await listeningRunOnManualClock();
    const rescue = await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    expect(rescue.requeued.map((r) => r.id)).toEqual([id]);
    clock.advance(h.leaseMs / 2); // due for renewal
    expect(await w.executor.extendLeases()).toBe(0);
    expect(listeningCtx?.signal.reason).toBeInstanceOf(LeaseLostError);
    await running;
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1 }); // its late failure changes nothing
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['lost']);
  });

  it('a run rescued while the same worker claimed its row again is aborted with LeaseLostError at the next renewal; the newer attempt keeps its lease', async () => {
    const { clock, id, w, running: first } = await listeningRunOnManualClock();
    const older = listeningCtx;
    // As for a worker re-registered under a new id: its old id found dead, its row queued again and claimed by it.
    await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [w.identity.id]);
    listening = gate();
    const second = w.executor.execute('default', h.hint(id, { kind: 'listening' }));
    await listening.started;
    const newer = listeningCtx;
    expect([older?.attempt, newer?.attempt]).toEqual([1, 2]);
    clock.advance(h.leaseMs / 2); // both due for renewal
    expect(await w.executor.extendLeases()).toBe(1);
    expect(older?.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(newer?.signal.aborted).toBe(false);
    await w.executor.releaseUnfinished(); // ends the newer one
    await Promise.all([first, second]);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 2 });
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['lost', 'released']);
  });

  it('a run whose lease has passed while its renewal fails has its signal aborted with LeaseLostError', async () => {
    const { clock, id, w, running } = await listeningRunOnManualClock();
    await h.ds.query(`CREATE FUNCTION refuse_renewal() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF OLD.state = 'r' AND NEW.state = 'r' THEN RAISE EXCEPTION 'renewal refused' USING ERRCODE = '53300'; END IF; RETURN NEW; END $$`);
    await h.ds.query(`CREATE TRIGGER refuse_renewal BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_renewal()`);
    clock.advance(h.leaseMs / 2);
    await expect(w.executor.extendLeases()).rejects.toThrow('renewal refused');
    expect(listeningCtx?.signal.aborted).toBe(false); // not renewed, but its lease still holds
    clock.advance(h.leaseMs);
    await expect(w.executor.extendLeases()).rejects.toThrow('renewal refused');
    expect(listeningCtx?.signal.reason).toBeInstanceOf(LeaseLostError);
    await h.ds.query(`DROP TRIGGER refuse_renewal ON jobs; DROP FUNCTION refuse_renewal()`);
    await running;
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringMatching(/^LeaseLostError/) });
  });

  it('a run whose lease passes while its renewals never answer (its Postgres connection gone quiet) has its signal aborted with LeaseLostError', async () => {
    await destroyHarness(h);
    const clock = new ManualClock(Date.now());
    h = await createHarness({ handlers: [listeningHandler], clock });
    const url = new URL(h.db.url);
    const proxy = await quietProxy(Number(url.port || 5432), url.hostname);
    url.port = String(proxy.port);
    const own = createDataSource({ url: url.toString(), poolSize: 1 }); // its one connection hung, a renewal waits for it
    await own.initialize();
    try {
      const [id] = await h.enqueue([{ kind: 'listening' }]);
      await h.hot.runOnce();
      const w = h.worker({ dataSource: own });
      const running = h.runWorker(w);
      await listening.started;
      proxy.quiet();
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'Date', 'hrtime', 'performance'] });
      clock.advance(h.leaseMs / 2); // due for renewal, its lease still holds
      const first = w.executor.extendLeases();
      await jest.advanceTimersByTimeAsync(h.leaseMs / 3);
      await expect(answerByNow(first)).rejects.toThrow(WaitTimeoutError); // given up: a fresh connection may answer the next
      expect(listeningCtx?.signal.aborted).toBe(false);
      // Its connection discarded, not left checked out on the quiet socket (each turn held another).
      expect((own.driver as unknown as { master: { totalCount: number } }).master.totalCount).toBe(0);
      clock.advance(h.leaseMs / 2); // the lease has passed; the promoter may have given the job to another worker
      const second = w.executor.extendLeases();
      await jest.advanceTimersByTimeAsync(HEARTBEAT_MS);
      await expect(answerByNow(second)).rejects.toThrow(WaitTimeoutError);
      expect(listeningCtx?.signal.reason).toBeInstanceOf(LeaseLostError); // unbounded, it waited on until /health/live restarted the pod
      await proxy.close(); // the hung connection ends: the run's write fails, and the lease rescue has the row
      await jest.advanceTimersByTimeAsync(COMPLETION_LINGER_MS); // the write's group commit goes
      jest.useRealTimers();
      await running;
      expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1 });
    } finally {
      jest.useRealTimers();
      await proxy.close();
      await own.destroy().catch(() => undefined);
    }
  });
});
