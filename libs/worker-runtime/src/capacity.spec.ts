import { LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { completed, defineHandler } from '@almanac/kinds';
import { SweepsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { noopHandler } from '@almanac/testing/built-in-kinds';

/**
 * An attempt is a run. Jobs waiting for a worker (none alive, or the pool behind) cost no
 * attempt however long they wait, and a long handler keeps its lease by heartbeat.
 */
describe('delivery follows worker capacity', () => {
  let h: DeliveryHarness;
  afterEach(() => destroyHarness(h));

  async function lostAttempts(): Promise<number> {
    const [{ n }] = await h.ds.query(`SELECT count(*)::int AS n FROM job_attempts WHERE outcome = 'lost'`);
    return n as number;
  }

  it('no worker for longer than a lease: attempts stay 0, the sweeps leave the rows alone, and they run once when a worker starts', async () => {
    h = await createHarness({ handlers: [noopHandler], leaseMs: 1000 });
    const ids = await h.enqueue([{ kind: 'noop', maxAttempts: 1 }, { kind: 'noop', maxAttempts: 1 }]);
    await h.hot.runOnce();
    const sweeps = new SweepsRepository(h.ds);
    const hourLater = new Date(Date.now() + 3600_000);
    // An hour without a worker: no lease to expire, and the overdue scan finds the rows still waiting in their pool.
    expect(await sweeps.rescueRunning(hourLater, 100, LOST_ATTEMPT_ERROR)).toMatchObject({ requeued: [], dead: 0 });
    const overdue: string[] = [];
    await sweeps.scanQueued(hourLater, 100, 100, async (rows) => void overdue.push(...rows.map((r) => r.id)));
    expect(overdue.sort()).toEqual([...ids].sort());
    const lost = h.lostHints();
    const rows = await Promise.all(ids.map(async (id) => ({ id, tenantId: 1, kind: 'noop', dueMs: (await h.job(id)).run_at.getTime() })));
    expect(await lost.of(rows, hourLater.getTime())).toEqual([]);
    for (const id of ids) expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });

    await h.runWorker(h.worker());
    for (const id of ids) {
      expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
      expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['succeeded']);
    }
  });

  it('a backlog far beyond a tiny concurrency ends with every job run once and no lost attempt', async () => {
    h = await createHarness({ handlers: [noopHandler], leaseMs: 1000 });
    const n = 300;
    await h.enqueue(Array.from({ length: n }, () => ({ kind: 'noop', maxAttempts: 1 })));
    const w = await h.liveWorker({ concurrency: 3 });
    await h.hot.runOnce();
    const sweeps = new SweepsRepository(h.ds);
    for (let turn = 0; turn < 200; turn++) {
      if ((await h.runWorker(w)) === 0) break;
      // Between turns the lease rescue runs as if time had passed: nothing waiting is running.
      expect((await sweeps.rescueRunning(new Date(Date.now() + 60_000), 100, LOST_ATTEMPT_ERROR)).requeued).toEqual([]);
    }
    const [{ done, once }] = await h.ds.query(
      `SELECT count(*) FILTER (WHERE state = 'd')::int AS done, count(*) FILTER (WHERE attempts = 1)::int AS once FROM jobs`,
    );
    expect({ done, once, lost: await lostAttempts() }).toEqual({ done: n, once: n, lost: 0 });
  });

  /** One job of a handler that runs until released, started on a live worker; lease 10 s, manual clock. */
  async function longRunning() {
    let release!: () => void;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const long = defineHandler({
      kind: 'long',
      timeoutMs: 3600_000,
      handle: async () => {
        started();
        await new Promise<void>((r) => (release = r));
        return completed();
      },
    });
    const clock = new ManualClock(Date.now());
    h = await createHarness({ handlers: [long], clock, leaseMs: 10_000 });
    const [id] = await h.enqueue([{ kind: 'long' }]);
    const w = await h.liveWorker();
    await h.hot.runOnce();
    const run = h.runWorker(w);
    await running;
    return { id, w, clock, run, release };
  }

  it('the heartbeat extends the lease of a handler that runs long, so the rescue leaves it alone', async () => {
    const { id, w, clock, run, release } = await longRunning();
    const first = (await h.job(id)).lease_until!.getTime();
    expect(first - clock.now().getTime()).toBe(10_000);

    clock.advance(2000); // two thirds of the lease left: not renewed yet (no write per beat)
    await w.heartbeat.runOnce();
    expect((await h.job(id)).lease_until!.getTime()).toBe(first);
    clock.advance(2000); // less than two thirds left: renewed
    await w.heartbeat.runOnce();
    const renewed = (await h.job(id)).lease_until!.getTime();
    expect(renewed).toBe(clock.now().getTime() + 10_000);
    const rescue = await new SweepsRepository(h.ds).rescueRunning(new Date(first + 1), 100, LOST_ATTEMPT_ERROR);
    expect(rescue.requeued).toEqual([]);

    release();
    await run;
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('leases keep being renewed while a leaving worker drains, and when its beat cannot be written', async () => {
    const { id, w, clock, run, release } = await longRunning();

    await w.heartbeat.leave(); // SIGTERM: its capacity no longer counts at once
    await h.observer.runOnce();
    expect((await h.metrics.poolWorkers.get()).values.find((v) => v.labels.pool === 'default')?.value).toBe(0);
    clock.advance(5000);
    await w.heartbeat.runOnce();
    expect((await h.job(id)).lease_until!.getTime()).toBe(clock.now().getTime() + 10_000);

    jest.spyOn(w.identity, 'beat').mockRejectedValue(new Error('lock timeout'));
    clock.advance(5000);
    await w.heartbeat.runOnce();
    expect((await h.job(id)).lease_until!.getTime()).toBe(clock.now().getTime() + 10_000);

    release();
    await run;
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('a row starts at once even while a moved one gets its new hint from a Redis that does not answer yet', async () => {
    h = await createHarness({ handlers: [noopHandler] });
    const [due, later] = await h.enqueue([{ kind: 'noop' }, { kind: 'noop' }]);
    await h.ds.query(`UPDATE jobs SET run_at = now() + interval '1 hour' WHERE id = $1`, [later]); // rescheduled
    const w = h.worker();
    await w.identity.register();
    let redisBack!: () => void;
    const redisGate = new Promise<void>((r) => (redisBack = r));
    const add = jest.spyOn(h.hotQueue, 'enqueue').mockImplementation(() => redisGate);
    const taken = (id: string) => ({ id, tenantId: 1, kind: 'noop', dueMs: Date.now(), slots: 0 });
    const dueRun = w.executor.execute('default', taken(due));
    const laterRun = w.executor.execute('default', taken(later));
    expect(await dueRun).toBe('submitted'); // while the hint for the moved row has not been added
    redisBack();
    expect(await laterRun).toBe('stale');
    await w.executor.drain();
    expect(await h.job(due)).toMatchObject({ state: 'd', attempts: 1 });
    expect(await h.job(later)).toMatchObject({ state: 'q', attempts: 0 });
    expect(add).toHaveBeenCalledWith([expect.objectContaining({ id: later })], expect.any(Date), expect.anything()); // a hint for its new time
  });

  it('an attempt starts when the handler starts: the history holds only real runs, started at the handler start', async () => {
    const clock = new ManualClock(Date.now());
    h = await createHarness({ handlers: [noopHandler], clock });
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    await h.hot.runOnce(); // waits in its pool: no worker yet
    const workerBack = clock.advance(10 * 60_000); // ten minutes without a worker
    await h.runWorker(h.worker());
    expect((await h.attempts(id)).map((a) => [a.attempt, a.outcome, a.started_at.getTime()])).toEqual([[1, 'succeeded', workerBack.getTime()]]);
  });
});
