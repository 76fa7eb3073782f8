import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { executorHandlers, oddEffect, renewHandlerState, scatter } from '@almanac/testing/executor-rig';

/** What a failed run leaves of the writes its handler made through ctx.tx(): nothing, however it failed. */
describe('a failed run and its transaction', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  it("commits none of the writes its handler's other branches still send after it failed", async () => {
    await h.ds.query(`CREATE TABLE scatter_writes (branch int)`);
    const [id] = await h.enqueue([{ kind: 'scatter', maxAttempts: 2 }]);
    await h.hot.runOnce();
    await h.runWorker(h.worker());
    await scatter.settled;
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('item 0 failed') });
    // After a ROLLBACK the branches' next INSERTs ran on their own and committed.
    expect((await h.ds.query(`SELECT count(*)::int AS n FROM scatter_writes`))[0].n).toBe(0);
  });

  it("fails the attempt of a handler that throws what String() cannot print, and gives its transaction's connection back", async () => {
    const [id, revoked] = await h.enqueue([{ kind: 'odd-throw', maxAttempts: 2 }, { kind: 'odd-throw', maxAttempts: 2, payload: { revoked: true } }]);
    await h.hot.runOnce();
    await h.runWorker(h.worker());
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('[object Object]') });
    expect(await h.job(revoked)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('a value that cannot be read') });
    const idle = await h.ds.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`);
    expect(idle[0].n).toBe(0);
  });

  it('records an effect done whose result Postgres refuses, so no later run makes the call again, and says so in the log', async () => {
    const [id] = await h.enqueue([{ kind: 'odd-effect', maxAttempts: 3 }]);
    await h.hot.runOnce();
    const warned: unknown[] = [];
    const child = h.logger.child.bind(h.logger);
    const jobLoggers = jest.spyOn(h.logger, 'child').mockImplementation((...args: Parameters<typeof child>) => {
      const logger = child(...args);
      logger.warn = ((obj: unknown) => void warned.push(obj));
      return logger;
    });
    await h.runWorker(h.worker());
    jobLoggers.mockRestore();
    // Before, nothing told the operator: a replay read null.
    expect(warned).toContainEqual(expect.objectContaining({ effect: expect.any(String), reason: expect.stringMatching(/U\+0000|not JSON|bytes of JSON|surrogate/) }));
    // Before, the record's failure failed the run, the claim stayed open and went stale, and each retry called again.
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect(await h.ds.query(`SELECT result, done_at IS NOT NULL AS done FROM job_effects WHERE job_id = $1`, [id])).toEqual([{ result: null, done: true }]);
    expect(oddEffect.calls).toBe(1);
  });
});
