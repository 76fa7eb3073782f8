import { within } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { eventually, executorHandlers, greedy, lockedPid, renewHandlerState, stuckCtx } from '@almanac/testing/executor-rig';

/** The worker executor's handlers that overrun their timeout: the attempt fails, and what they hold is let go. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  it('a handler that overruns its timeout fails the attempt even if it ignores the signal', async () => {
    const [id] = await h.enqueue([{ kind: 'stuck' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    const row = await h.job(id);
    expect(row).toMatchObject({ state: 'q', attempts: 1 });
    expect(row.last_error).toMatch(/HandlerTimeoutError: handler timed out after 50 ms/);
    // Its signal, first read after the timeout, is aborted too: a call it starts late is cut short.
    expect(stuckCtx?.signal.reason).toMatchObject({ name: 'HandlerTimeoutError' });
  });

  it('a handler deaf to its signal commits nothing once its attempt timed out, and leaves no pooled connection inside a transaction', async () => {
    await h.ds.query(`CREATE TABLE greedy_writes (n int)`);
    const [id] = await h.enqueue([{ kind: 'greedy' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringMatching(/HandlerTimeoutError/) });
    await within(5000, greedy.started, 'the abandoned handler to stop writing');
    expect((await h.ds.query(`SELECT count(*)::int AS n FROM greedy_writes`))[0].n).toBe(0);
    // Its backend goes once it sees the socket closed: none stays idle in a transaction.
    const idleInTx = async () => (await h.ds.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`))[0].n as number;
    await eventually(async () => (await idleInTx()) === 0);
  });

  it("a timed-out handler's statement waiting on a lock is ended with its attempt, not left holding a server connection the pool replaced", async () => {
    await h.ds.query(`CREATE TABLE lock_target (n int); INSERT INTO lock_target VALUES (1)`);
    const locker = h.ds.createQueryRunner();
    await locker.startTransaction();
    try {
      await locker.query(`SELECT 1 FROM lock_target FOR UPDATE`);
      const [id] = await h.enqueue([{ kind: 'locked' }]);
      const w = h.worker();
      await h.hot.runOnce();
      await h.runWorker(w);
      expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringMatching(/HandlerTimeoutError/) });
      expect(lockedPid).toEqual(expect.any(Number));
      // Still before the lock is let go: a closed socket alone leaves the backend waiting for it.
      await eventually(async () => (await h.ds.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [lockedPid])).length === 0, 3000);
    } finally {
      await locker.rollbackTransaction();
      await locker.release();
    }
  });
});
