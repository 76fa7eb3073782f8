import { Clock, TAKE_AHEAD_MS } from '@almanac/platform';
import { noopHandler } from '@almanac/testing/built-in-kinds';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { claimReplyLostOnce, connectionLost, executorHandlers, renewHandlerState, slowGate } from '@almanac/testing/executor-rig';
import { freePort } from '@almanac/testing/free-port';
import { pushHints } from '@almanac/testing/ready-hints';
import IORedis from 'ioredis';

/** The worker executor's claims: not before a row is due, sent again when Postgres fails them, a row whose claim Postgres refuses set aside, and the takes that bring them. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

  it("a job whose claim Postgres refuses on a value is set aside (dead, set_aside) and every job batched with it, of any tenant, runs", async () => {
    // A row no claim can take, whatever the reason: a value the update of this one row trips on.
    await h.ds.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.key = 'poison-row' AND NEW.state = 'r' THEN RAISE EXCEPTION 'value out of range' USING ERRCODE = '22003'; END IF; RETURN NEW; END $$`);
    await h.ds.query(`CREATE TRIGGER refuse_poison BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    try {
      const w = h.worker({ workerId: 'w-1' });
      const ids = await h.enqueue([
        ...Array.from({ length: 5 }, (_, i) => ({ kind: 'noop', tenantId: 1 + (i % 2) })),
        { kind: 'noop', key: 'poison-row', tenantId: 2 },
        ...Array.from({ length: 4 }, (_, i) => ({ kind: 'noop', tenantId: 1 + (i % 2) })),
      ]);
      await h.hot.runOnce();
      await h.runWorker(w);
      for (const [i, id] of ids.entries()) if (i !== 5) expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
      expect(await h.job(ids[5])).toMatchObject({ state: 'x', attempts: 0, last_error: expect.stringContaining('(SQLSTATE 22003)') });
      const aside = await w.metrics.setAside.get();
      expect(aside.values.filter((v) => v.value > 0)).toEqual([expect.objectContaining({ labels: { statement: 'claim' }, value: 1 })]);
    } finally {
      await h.ds.query(`DROP TRIGGER refuse_poison ON jobs; DROP FUNCTION refuse_poison()`);
    }
  });

  it('a hint taken before its row is due waits for it: claimed (attempt counted) when due, never earlier', async () => {
    const runAt = new Date(Date.now() + 400);
    const [id] = await h.enqueue([{ kind: 'noop', runAt }]);
    // Taken early, as a take a few ms ahead (or a clock that moved between take and claim) brings it.
    const w = h.worker();
    await w.heartbeat.runOnce();
    const running = w.executor.execute('default', h.hint(id, { kind: 'noop', runAt }));
    for (const until = runAt.getTime() - 50; Date.now() < until; ) expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });
    await running;
    await w.executor.drain();
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect((await h.attempts(id))[0].started_at.getTime()).toBeGreaterThanOrEqual(runAt.getTime());
  });

  it('a take leaves a row not due yet in its pool, holding no slot, and takes it once it is due', async () => {
    const runAt = new Date(Date.now() + 300);
    const [id] = await h.enqueue([{ kind: 'noop', runAt }]);
    await pushHints(h.ready, 'default', [h.hint(id, { kind: 'noop', runAt })]);
    const w = h.worker();
    expect(await h.runWorker(w)).toBe(0);
    expect(await h.readyIds()).toEqual([id]);
    for (let ran = 0; ran === 0; ) {
      const passAt = Date.now();
      ran = await h.runWorker(w); // each pass one take: none takes it before it is within TAKE_AHEAD_MS
      if (ran > 0) expect(passAt).toBeGreaterThanOrEqual(runAt.getTime() - TAKE_AHEAD_MS - 10);
    }
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect((await h.attempts(id))[0].started_at.getTime()).toBeGreaterThanOrEqual(runAt.getTime());
  });

  it('a claim that fails (Postgres restarting) is sent again, and the job runs', async () => {
    const w = await h.liveWorker();
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    await h.hot.runOnce();
    jest.spyOn(h.repo, 'claim').mockRejectedValueOnce(connectionLost());
    await w.taker.runOnce();
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('a claim that committed but whose reply was lost is sent again and returns what it took: a maxAttempts 1 job runs once', async () => {
    const w = await h.liveWorker();
    const [id] = await h.enqueue([{ kind: 'noop', maxAttempts: 1 }]);
    await h.hot.runOnce();
    claimReplyLostOnce(h);
    await w.taker.runOnce();
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1, claimed_by: null });
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['succeeded']);
  });

  it('a claim that keeps failing gives its hint back to the head of its flow; it runs once the database answers', async () => {
    const w = await h.liveWorker({ claimRetryForMs: 50 });
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    await h.hot.runOnce();
    jest.spyOn(h.repo, 'claim').mockRejectedValue(connectionLost());
    await w.taker.runOnce();
    expect(await h.readyIds()).toEqual([id]); // back in its pool, not left to the overdue sweep
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });
    jest.restoreAllMocks();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('no handler starts early even when a timer fires before the clock reaches the run time', async () => {
    // A clock running at half the timers' speed: a timer set for the remaining time fires
    // before the clock gets there (in small, the millisecond a real timer may fire early).
    class SlowClock extends Clock {
      private readonly t0 = Date.now();
      now(): Date {
        return new Date(this.t0 + Math.floor((Date.now() - this.t0) / 2));
      }
    }
    await destroyHarness(h);
    const clock = new SlowClock();
    h = await createHarness({ handlers: [noopHandler], clock });
    const runAt = new Date(clock.now().getTime() + 200);
    const [id] = await h.enqueue([{ kind: 'noop', runAt }]);
    const w = h.worker();
    await w.heartbeat.runOnce();
    await w.executor.execute('default', h.hint(id, { kind: 'noop', runAt }));
    await w.executor.drain();
    const [attempt] = await h.attempts(id);
    expect(attempt.started_at.getTime()).toBeGreaterThanOrEqual(runAt.getTime());
  });

  it("takes over the shared connection while a lane's own take connection cannot reach Redis", async () => {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    await h.hot.runOnce();
    // Nothing listens there, so the connections the taker opens for itself never come up (as with
    // Redis at maxclients, or an ACL that refuses them); the shared one works.
    const unreachable = new IORedis(await freePort(), '127.0.0.1', { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    unreachable.on('error', () => undefined);
    try {
      const w = h.worker({ takerConnection: unreachable });
      await h.startWorker(w);
      await slowGate.started; // a take queued on the dead connection would wait here until Jest's timeout
      slowGate.release();
      await w.taker.close(10_000);
      expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    } finally {
      unreachable.disconnect();
    }
  });
});
