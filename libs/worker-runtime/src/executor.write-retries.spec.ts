import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { connectionLost, executorHandlers, flaky, renewHandlerState, slowGate } from '@almanac/testing/executor-rig';

/** The worker executor's outcome writes that fail: written again, during a shutdown's grace period too, and not past its deadline. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  it('an outcome whose write fails (Postgres restarting) is written again, not left for the lease rescue', async () => {
    const w = await h.liveWorker();
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    await h.hot.runOnce();
    jest.spyOn(h.repo, 'complete').mockRejectedValueOnce(connectionLost());
    await w.taker.runOnce(); // drains the executor, retry included
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['succeeded']);
  });

  it('a retry whose group commit committed but lost its reply is recognised when sent again: its hint goes back on the hot queue', async () => {
    flaky.mode = 'retry';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 5 }]);
    await h.hot.runOnce();
    const real = h.repo.complete.bind(h.repo);
    jest.spyOn(h.repo, 'complete').mockImplementationOnce(async (...args: Parameters<typeof real>) => {
      await real(...args);
      throw connectionLost();
    });
    await h.runWorker(h.worker());
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: 'not yet' });
    expect(await h.hotIds('waiting')).toEqual([id]); // not left for the overdue sweep
  });

  /** A slow job running on a worker, whose first completion write Postgres refuses (SQLSTATE 40001, trigger `name`). */
  async function slowRunWithRefusedCompletion(name: string): Promise<{ id: string; w: ReturnType<typeof h.worker> }> {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.startWorker(w);
    await slowGate.started;
    await h.ds.query(`CREATE SEQUENCE ${name}_seq; CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF OLD.state = 'r' AND NEW.state <> 'r' AND nextval('${name}_seq') = 1 THEN RAISE EXCEPTION 'completion refused' USING ERRCODE = '40001'; END IF; RETURN NEW; END $$`);
    await h.ds.query(`CREATE TRIGGER ${name} BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION ${name}()`);
    return { id, w };
  }

  it("during a shutdown's grace period a failed outcome write is retried: the job is not left running for the rescue to run again", async () => {
    const { id, w } = await slowRunWithRefusedCompletion('refuse_completion_once');
    const closing = w.taker.close(10_000);
    slowGate.release(); // ends within the grace period; its first completion write fails
    expect(await closing).toEqual({ released: 0 });
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['succeeded']);
  });

  it("the grace period's retries last until the handlers' deadline, counted from when the wait for them begins, not from the close", async () => {
    const { id, w } = await slowRunWithRefusedCompletion('refuse_completion_once_2');
    const closing = w.taker.close(10_000);
    // The loops' own stop (up to ~5 s before the handlers' wait begins), as 20 s on the clock.
    const later = jest.spyOn(h.clock, 'now').mockImplementation(() => new Date(Date.now() + 20_000));
    try {
      slowGate.release();
      expect(await closing).toEqual({ released: 0 });
    } finally {
      later.mockRestore();
      await h.ds.query(`DROP TRIGGER refuse_completion_once_2 ON jobs`);
    }
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 }); // before: left running for the rescue
  });

  it("past a shutdown's deadline a failed outcome write is not retried: the pod must stop within its grace; the lease rescue takes over", async () => {
    const w = await h.liveWorker();
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    await h.hot.runOnce();
    w.executor.writer.retryUntilMs = h.clock.now().getTime();
    jest.spyOn(h.repo, 'complete').mockRejectedValueOnce(connectionLost());
    await w.taker.runOnce();
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1 }); // left running for the rescue
  });
});
