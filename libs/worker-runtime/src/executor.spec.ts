import { Clock, COMPLETION_LINGER_MS, HEARTBEAT_MS, ManualClock, SLOT_TTL_MS, TAKE_AHEAD_MS, WaitTimeoutError, within } from '@almanac/platform';
import { DEFAULT_SHARE, type HandlerOutcome, type JsonValue, LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { createDataSource, SweepsRepository } from '@almanac/persistence';
import { completed, defineHandler, discard, type HandlerContext, retry, snooze } from '@almanac/kinds';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { freePort } from '@almanac/testing/free-port';
import IORedis from 'ioredis';
import { chargeHandler, noopHandler } from '@almanac/testing/built-in-kinds';
import { LeaseLostError } from './handler-run';
import { pushHints } from '@almanac/testing/ready-hints';
import { quietProxy } from '@almanac/testing/quiet-proxy';

/** A handler the test controls: it reports when it started and finishes when told. */
function gate() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let onStart!: () => void;
  const started = new Promise<void>((r) => (onStart = r));
  return { release, released, started, onStart };
}

async function chargeCount(h: DeliveryHarness): Promise<number> {
  const [{ n }] = await h.ds.query(`SELECT count(*)::int AS n FROM charges`);
  return n as number;
}

/** What node-pg throws when Postgres goes away mid-statement (admin shutdown). */
const connectionLost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });

/** The next claim commits, then its reply is lost: the caller sees connectionLost. */
function claimReplyLostOnce(h: DeliveryHarness): void {
  const real = h.repo.claim.bind(h.repo);
  jest.spyOn(h.repo, 'claim').mockImplementationOnce(async (...args: Parameters<typeof real>) => {
    await real(...args);
    throw connectionLost();
  });
}

const flaky = { calls: 0, mode: 'throw' as 'throw' | 'retry' | 'discard' | 'retry-later' | 'snooze' };
const flakyHandler = defineHandler<unknown>({
  kind: 'flaky',
  timeoutMs: 5000,
  handle: async () => {
    flaky.calls++;
    switch (flaky.mode) {
      case 'throw':
        throw new Error(`boom ${'x'.repeat(5000)}`);
      case 'retry':
        return retry({ delayMs: 0, reason: 'not yet' });
      case 'retry-later':
        return retry({ delayMs: 3 * 24 * 3600_000, reason: 'in three days' });
      case 'discard':
        return discard('bad input');
      case 'snooze':
        return snooze({ delayMs: 0, reason: 'held by another run' });
    }
  },
});

let slowGate = gate();
const slowHandler = defineHandler<unknown>({
  kind: 'slow',
  timeoutMs: 60_000,
  handle: async () => {
    slowGate.onStart();
    await slowGate.released;
    return completed({ slow: true });
  },
});

let progressGate = gate();
/** Reports progress, waits to be told to go on, reports again and finishes. */
const progressHandler = defineHandler<{ note?: string } | null>({
  kind: 'progress',
  timeoutMs: 60_000,
  handle: async (ctx, payload) => {
    const { progress } = ctx; // ctx's functions work destructured, as handlers use them
    progress(40, payload?.note?.replace('{NUL}', '\u0000') ?? 'rows 400 of 1000'); // a payload cannot hold U+0000
    progressGate.onStart();
    await progressGate.released;
    ctx.progress(90);
    expect(() => ctx.progress(101)).toThrow(RangeError);
    return completed();
  },
});

/** Ends as its payload says, with values Postgres cannot store when asked (a NUL in text). */
const poisonHandler = defineHandler<{ nul?: 'result' | 'error'; bad?: 'bigint' | 'shape' }>({
  kind: 'poison',
  timeoutMs: 5000,
  handle: async (_ctx, payload) => {
    if (payload?.nul === 'error') throw new Error('binary body \u0000 in the message');
    if (payload?.bad === 'bigint') return completed({ cents: 10n } as unknown as JsonValue); // a JS handler's result TypeScript did not check
    if (payload?.bad === 'shape') return { type: 'done' } as unknown as HandlerOutcome;
    return completed({ note: payload?.nul === 'result' ? 'a\u0000b' : 'fine' });
  },
});

let stuckCtx: HandlerContext | undefined;
const stuckHandler = defineHandler<unknown>({
  kind: 'stuck',
  timeoutMs: 50,
  handle: (ctx) => ((stuckCtx = ctx), new Promise(() => undefined)), // ignores its signal on purpose
});

let greedy = gate();
/** Writes through the EntityManager ctx.tx() gave it, deaf to its signal, until a write fails; then says it stopped. */
const greedyHandler = defineHandler<unknown>({
  kind: 'greedy',
  timeoutMs: 50,
  handle: async (ctx) => {
    const em = await ctx.tx();
    try {
      for (;;) await em.query(`INSERT INTO greedy_writes VALUES (1)`);
    } finally {
      greedy.onStart();
    }
  },
});

let lockedPid: number | undefined;
/** Waits in its transaction for a row the test holds locked, past its timeout. */
const lockedHandler = defineHandler<unknown>({
  kind: 'locked',
  timeoutMs: 100,
  handle: async (ctx) => {
    const em = await ctx.tx();
    lockedPid = (await em.query(`SELECT pg_backend_pid() AS pid`))[0].pid;
    await em.query(`SELECT 1 FROM lock_target FOR UPDATE`);
    return completed();
  },
});

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

/** What `p` settled with if it has settled, else 'no answer' (a settled promise wins the race). */
const answerByNow = <T>(p: Promise<T>) => Promise.race([p, Promise.resolve('no answer' as const)]);

/** Polls `look` until it is true, for at most `ms` (a real async effect, no timer of ours to drive). */
async function eventually(look: () => Promise<boolean>, ms = 5000): Promise<void> {
  for (const until = Date.now() + ms; !(await look()); ) if (Date.now() > until) throw new Error(`not true within ${ms} ms`);
}

describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    flaky.calls = 0;
    slowGate = gate();
    progressGate = gate();
    greedy = gate();
    listening = gate();
    h = await createHarness({ handlers: [noopHandler, chargeHandler, flakyHandler, slowHandler, stuckHandler, poisonHandler, progressHandler, greedyHandler, lockedHandler] });
  });
  afterEach(() => destroyHarness(h));

  it('runs a job end to end and records the attempt (group-committed, no handler transaction)', async () => {
    const w = h.worker({ workerId: 'w-1' });
    const ids = await h.enqueue([{ kind: 'noop' }, { kind: 'noop' }, { kind: 'noop' }]);
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(3);
    for (const id of ids) {
      const row = await h.job(id);
      expect(row).toMatchObject({ state: 'd', attempts: 1, lease_until: null, last_error: null });
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(await h.attempts(id)).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'succeeded', worker_id: 'w-1', error: null }),
      ]);
    }
    const exec = await w.metrics.executions.get();
    expect(exec.values).toEqual([expect.objectContaining({ labels: { kind: 'noop', outcome: 'succeeded' }, value: 3 })]);
    const lag = await w.metrics.lag.get();
    expect(lag.values.find((v) => v.metricName === 'almanac_dispatch_lag_seconds_count')).toMatchObject({ labels: { pool: 'default' }, value: 3 });
  });

  it("an outcome Postgres refuses (a NUL in its result or error, a result that is not JSON) is written without it, one that is not an outcome fails its run; the rest of its group commit is written whole", async () => {
    const w = h.worker({ workerId: 'w-1' });
    const ids = await h.enqueue([
      ...Array.from({ length: 6 }, () => ({ kind: 'poison', payload: {} })),
      { kind: 'poison', payload: { nul: 'result' } },
      { kind: 'poison', payload: { nul: 'error' } },
      { kind: 'poison', payload: { bad: 'bigint' } },
      { kind: 'poison', payload: { bad: 'shape' } },
    ]);
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(10);
    for (const id of ids.slice(0, 6)) expect(await h.job(id)).toMatchObject({ state: 'd', result: { note: 'fine' } });
    expect(await h.job(ids[6])).toMatchObject({ state: 'd', result: null }); // it succeeded: its effects happened
    expect((await h.attempts(ids[6]))[0]).toMatchObject({ outcome: 'succeeded', error: expect.stringContaining('could not be stored (SQLSTATE 22P05)') });
    expect(await h.job(ids[7])).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('could not be stored (SQLSTATE 22021)') });
    // A result JSON cannot hold is set aside like a NUL; what is not an outcome fails its run. Neither fails the batch.
    expect((await h.attempts(ids[8]))[0]).toMatchObject({ outcome: 'succeeded', error: expect.stringContaining('could not be stored (SQLSTATE 22032)') });
    expect(await h.job(ids[9])).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringContaining('TypeError: the handler returned an object with type "done"') });
    const aside = await w.metrics.setAside.get();
    expect(aside.values.filter((v) => v.value > 0)).toEqual([expect.objectContaining({ labels: { statement: 'completion' }, value: 3 })]);
  });

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

  it('stores a charge exactly once when two hints of one row are taken by two workers at the same time', async () => {
    const seed = { kind: 'charge', payload: { invoiceId: 'inv-1', amountCents: 500 } };
    const [id] = await h.enqueue([seed]);
    const a = await h.liveWorker({ workerId: 'a' });
    const b = await h.liveWorker({ workerId: 'b' });
    await h.hot.runOnce();
    // A second hint of the same row (a dispatcher killed after its hand-off, its envelope handed again).
    await pushHints(h.ready, 'default', [h.hint(id, seed)]);
    expect(await h.readyIds()).toEqual([id, id]);
    const [na, nb] = await Promise.all([a.taker.runOnce(1), b.taker.runOnce(1)]);
    expect(na + nb).toBe(2);
    expect(await chargeCount(h)).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1, result: { charged: true } });
    expect(await h.attempts(id)).toHaveLength(1);
  });

  it('two hints of one row claimed in separate claims of one tick run it once: no two claims share a lease', async () => {
    await destroyHarness(h);
    const clock = new ManualClock(Date.now()); // every claim of the tick reads the same millisecond
    h = await createHarness({ handlers: [slowHandler], clock });
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker({ maxBatch: 3 }); // claims of one row each
    await w.heartbeat.runOnce();
    const hint = h.hint(id, { kind: 'slow' });
    const runs = [w.executor.execute('default', hint), w.executor.execute('default', hint)];
    await slowGate.started;
    await w.executor.drain(); // both claims answered while the first run still holds the row
    slowGate.release();
    expect((await Promise.all(runs)).sort()).toEqual(['stale', 'submitted']);
    await w.executor.drain();
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it("runs a row whose hint a take's lost reply left in the worker's taken hash, once the overdue repair hints it again", async () => {
    const seed = { kind: 'noop' };
    const [id] = await h.enqueue([seed]);
    const w = await h.liveWorker();
    await h.hot.runOnce();
    await h.ready.take('default', 10, Date.now(), String(w.identity.id)); // executed, its reply lost: the worker never saw the row
    const row = { id, tenantId: 1, kind: 'noop', dueMs: (await h.job(id)).run_at.getTime() };
    const lost = await h.lostHints().of([row], Date.now() + 60_000);
    await h.hotQueue.enqueue(lost.map((r) => h.hint(r.id, seed)), new Date(), { repair: true }); // the overdue sweep's repair
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('a second copy of a row the worker runs is dropped by the worker: one run, its slot freed once', async () => {
    const [id] = await h.enqueue([{ kind: 'slow', tenantId: 1 }]);
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 2 }]]));
    await h.hot.runOnce();
    const w = h.worker();
    await h.startWorker(w);
    await slowGate.started;
    await h.hotQueue.enqueue([h.hint(id, { kind: 'slow', tenantId: 1 })], new Date(), { repair: true }); // a repair's copy while it runs
    await h.hot.runOnce(); // handed over with the pool's wake token: the worker takes it now
    const slots = `${h.ready.prefix}:almanac:limit:1:c`;
    for (let i = 0; i < 500 && (await h.ready.heads('default', [{ tenantId: 1, kind: 'slow' }]))[0] !== null; i++); // taken (each look is a round trip)
    expect((await h.ready.heads('default', [{ tenantId: 1, kind: 'slow' }]))[0]).toBeNull();
    slowGate.release();
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect(await h.attempts(id)).toHaveLength(1);
    expect((await w.metrics.dropped.get()).values).toEqual([]); // never claimed beside it (a stale claim would free the slot the run holds)
    expect(await h.redis.connection.zcard(slots)).toBe(0);
  });

  it('a hint after completion changes nothing; two copies in one take run at most once', async () => {
    const seed = { kind: 'charge', payload: { invoiceId: 'inv-2', amountCents: 700 } };
    const [id] = await h.enqueue([seed]);
    const w = await h.liveWorker();
    await h.hot.runOnce();
    await h.runWorker(w);
    await pushHints(h.ready, 'default', [h.hint(id, seed)]);
    await h.hotQueue.enqueue([h.hint(id, seed, new Date(Date.now() + 1))], new Date());
    await h.hot.runOnce();
    expect(await h.runWorker(w)).toBe(1); // the second copy is dropped by the take itself
    expect(await chargeCount(h)).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    const drops = Object.fromEntries((await w.metrics.dropped.get()).values.map((v) => [v.labels.reason, v.value]));
    expect(drops).toEqual({ stale: 1 });
  });

  it('a stale worker (attempt rescued and re-run meanwhile) completes nothing and its writes roll back', async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: 'inv-3', amountCents: 900 } }]);
    await h.hot.runOnce();
    const stale = h.worker({ workerId: 'stale' });
    // Hold the first attempt inside its handler transaction: swap in a blocking charge for this worker.
    const blocking = gate();
    const origHandle = chargeHandler.handle;
    const registry = h.registry as unknown as { byKind: Map<string, unknown> };
    registry.byKind.set('charge', {
      ...chargeHandler,
      handle: async (ctx: Parameters<typeof origHandle>[0], p: Parameters<typeof origHandle>[1]) => {
        const out = await origHandle(ctx, p);
        blocking.onStart();
        await blocking.released;
        return out;
      },
    });
    const running = h.runWorker(stale);
    await blocking.started;
    // Its worker is taken for dead: the rescue moves the row back to queued (a `lost` attempt) and it is handed out again.
    const rescue = await new SweepsRepository(h.ds).rescueRunning(new Date(), 100, LOST_ATTEMPT_ERROR, [stale.identity.id]);
    expect(rescue.requeued.map((r) => r.id)).toEqual([id]);
    await h.hotQueue.enqueue(rescue.requeued, new Date());
    await h.hot.runOnce();
    registry.byKind.set('charge', chargeHandler);
    const fresh = h.worker({ workerId: 'fresh' });
    // The fresh attempt's insert waits on the stale transaction's uncommitted row: let the stale one finish first.
    blocking.release();
    await running;
    await h.runWorker(fresh);
    expect(await chargeCount(h)).toBe(1);
    const [charge] = await h.ds.query(`SELECT job_id::text AS job_id FROM charges`);
    expect(charge.job_id).toBe(id);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
    const attempts = await h.attempts(id);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.worker_id])).toEqual([[1, 'lost', null], [2, 'succeeded', 'fresh']]);
    expect((await stale.metrics.dropped.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'stale_completion' }, value: 1 })]);
  });

  it('a thrown exception retries with backoff; the last attempt makes the job dead', async () => {
    flaky.mode = 'throw';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 2 }]);
    const w = h.worker({ retryPolicy: { baseMs: 10_000, factor: 2, maxMs: 60_000 } });
    await h.hot.runOnce();
    const before = Date.now();
    await h.runWorker(w);
    const row = await h.job(id);
    expect(row).toMatchObject({ state: 'q', attempts: 1 });
    // equal jitter: between half and all of base
    expect(row.run_at.getTime()).toBeGreaterThanOrEqual(before + 5000 - 50);
    expect(row.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 10_000);
    expect(row.last_error!.length).toBeLessThanOrEqual(2000);
    expect(await h.hotIds('delayed')).toEqual([id]); // its hint, for the retry's time
    // Skip the wait: make it due now, with a hint for now.
    await h.ds.query(`UPDATE jobs SET run_at = now() WHERE id = $1`, [id]);
    await h.hotQueue.enqueue([h.hint(id, { kind: 'flaky' })], new Date());
    await h.hot.runOnce();
    await h.runWorker(w);
    const dead = await h.job(id);
    expect(dead).toMatchObject({ state: 'x', attempts: 2 });
    expect(dead.finished_at).toBeInstanceOf(Date);
    expect(dead.last_error).toMatch(/^Error: boom/);
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['failed', 'failed']);
    expect(flaky.calls).toBe(2);
  });

  it('retry() with a delay beyond the hot horizon makes a cold row with no Redis entry; discard() makes it dead', async () => {
    flaky.mode = 'retry-later';
    const [later, gone] = await h.enqueue([{ kind: 'flaky' }, { kind: 'flaky' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w, 1);
    flaky.mode = 'discard';
    await h.runWorker(w, 1);
    const rows = [await h.job(later), await h.job(gone)];
    const cold = rows.find((r) => r.state === 's')!;
    expect(cold.run_at.getTime()).toBeGreaterThan(Date.now() + 2 * 24 * 3600_000);
    expect([...(await h.hotIds('delayed')), ...(await h.hotIds('waiting'))]).not.toContain(cold.id);
    expect(rows.find((r) => r.state === 'x')).toMatchObject({ last_error: 'bad input', attempts: 1 });
  });

  it('a retry is not swallowed by a stale hint of the same row still waiting in the hot queue', async () => {
    flaky.mode = 'retry';
    const seed = { kind: 'flaky', maxAttempts: 5 };
    const [id] = await h.enqueue([seed]);
    const w = h.worker();
    await h.hot.runOnce();
    // A stale hint of the row for tomorrow (it was rescheduled and back): the retry's hint is its own.
    await h.hotQueue.enqueue([h.hint(id, { ...seed, runAt: new Date(Date.now() + 86_400_000) })], new Date());
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1 });
    expect(await h.hotIds('waiting')).toEqual([id]);
    expect(await h.hot.runOnce()).toBe(1);
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 2 });
  });

  it('retry({delayMs: 0}) goes straight back on the hot queue and runs again', async () => {
    flaky.mode = 'retry';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 5 }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: 'not yet' });
    expect(await h.hot.runOnce()).toBe(1);
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 2 });
  });

  it('snooze() brings the job back without spending an attempt: its maxAttempts grows by one', async () => {
    flaky.mode = 'snooze';
    const [id] = await h.enqueue([{ kind: 'flaky', maxAttempts: 1 }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: 'held by another run' });
    expect((await h.attempts(id)).map((a) => a.outcome)).toEqual(['snoozed']);
    const exec = (await w.metrics.executions.get()).values;
    expect(exec).toEqual([expect.objectContaining({ labels: { kind: 'flaky', outcome: 'snoozed' }, value: 1 })]);
    expect((await w.metrics.deadJobs.get()).values).toEqual([expect.objectContaining({ value: 0 })]); // exported at 0 before the first death
    // The one attempt it was given is still its own: a failure now retries once more, then it is dead.
    flaky.mode = 'throw';
    expect(await h.hot.runOnce()).toBe(1);
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'x', attempts: 2 });
    expect((await w.metrics.deadJobs.get()).values).toEqual([expect.objectContaining({ value: 1 })]); // the failure that ended it, not the retried one before
    const [{ max_attempts }] = await h.ds.query(`SELECT max_attempts FROM jobs WHERE id = $1`, [id]);
    expect(max_attempts).toBe(2);
  });

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

  it("a worker without the handler of a job's kind leaves it queued, no attempt spent, and the overdue sweep offers it again", async () => {
    const [id] = await h.enqueue([{ kind: 'mystery', maxAttempts: 1 }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0, last_error: null });
    expect(await h.attempts(id)).toEqual([]);
    expect((await w.metrics.dropped.get()).values).toEqual([expect.objectContaining({ labels: { reason: 'unknown_kind' }, value: 1 })]);
    // Its hint is gone (no copy cycles through Redis): past the sweep's grace the row is lost, once.
    expect((await h.hotQueue.held()).filter((x) => x.hint.id === id)).toEqual([]);
    const row = { id, tenantId: 1, kind: 'mystery', dueMs: (await h.job(id)).run_at.getTime() };
    expect((await h.lostHints().of([row], Date.now() + 60_000)).map((x) => x.id)).toEqual([id]);
  });

  it('an invalid payload (a row stored before its kind had a schema) is discarded, not retried, naming the fields', async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: '', amountCents: -1 } }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'x', attempts: 1 });
    expect((await h.job(id)).last_error).toMatch(/charge payload: payload.invoiceId must NOT have fewer than 1 characters; payload.amountCents must be >= 1/);
    expect((await h.attempts(id))[0].outcome).toBe('discarded');
    expect((await w.metrics.deadJobs.get()).values).toEqual([expect.objectContaining({ value: 1 })]);
  });

  it("writes a running handler's progress with the next heartbeat, with its attempt, and keeps the last report once it ends", async () => {
    const [id] = await h.enqueue([{ kind: 'progress' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.startWorker(w);
    await progressGate.started;
    const progress = async () => (await h.ds.query(`SELECT progress FROM jobs WHERE id = $1`, [id]))[0].progress;
    expect(await progress()).toBeNull(); // reported, not written yet: no write per call
    await w.heartbeat.runOnce();
    expect(await progress()).toEqual({ percent: 40, note: 'rows 400 of 1000', attempt: 1, at: expect.any(String) });
    await w.heartbeat.runOnce(); // nothing new: the lease is fresh, so no write at all
    progressGate.release();
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect(await progress()).toMatchObject({ percent: 40 }); // 90 was reported after the last beat: progress is what was written while it ran
  });

  it('a progress note jsonb would refuse (U+0000, a pair cut in half) is written made storable, and the leases renewed with it', async () => {
    const [id] = await h.enqueue([{ kind: 'progress', payload: { note: `a{NUL}b ${'x'.repeat(195)}😀` } }]); // the cut at 200 falls between the emoji's halves
    const w = h.worker();
    await h.hot.runOnce();
    await h.startWorker(w);
    await progressGate.started;
    await h.ds.query(`UPDATE jobs SET lease_until = now() WHERE id = $1`, [id]); // due for renewal
    await w.heartbeat.runOnce();
    const [row] = await h.ds.query(`SELECT progress, lease_until > now() + interval '10 seconds' AS renewed FROM jobs WHERE id = $1`, [id]);
    expect(row).toMatchObject({ renewed: true, progress: { percent: 40, note: `a\ufffdb ${'x'.repeat(195)}` } });
    progressGate.release();
    await w.taker.close(10_000);
  });

  it('graceful shutdown: a handler still running at the deadline is released to queued, its hint back at the head of its flow', async () => {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker({ workerId: 'leaving' });
    await h.hot.runOnce();
    await h.startWorker(w);
    await slowGate.started;
    const { released } = await w.taker.close(100);
    expect(released).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, lease_until: null });
    expect(await h.attempts(id)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'released', worker_id: 'leaving' })]);
    expect(await h.readyIds()).toEqual([id]);
    slowGate.release(); // the abandoned handler finishing late changes nothing
    await new Promise((r) => setImmediate(r));
    const w2 = h.worker();
    slowGate = gate();
    slowGate.release();
    await h.runWorker(w2);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 2 });
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

  it("the rescue judges leases by the database's clock: a promoter host 31 s ahead leaves a live run alone", async () => {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    await h.hot.runOnce();
    const w = h.worker();
    await h.startWorker(w);
    await slowGate.started; // claimed, its lease 30 s past the database's now
    const aheadHost = new Date(Date.now() + h.leaseMs + 1000);
    expect(await h.rescueWith(() => []).runOnce(aheadHost)).toMatchObject({ requeued: 0, dead: 0 });
    expect(await h.job(id)).toMatchObject({ state: 'r', attempts: 1 });
    slowGate.release();
    await w.taker.close(10_000);
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it('beats while a lease renewal waits on a locked row: a slow renewal never makes a live worker look dead', async () => {
    const [id] = await h.enqueue([{ kind: 'progress' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.startWorker(w);
    await progressGate.started; // its progress report makes the next renewal write the row
    const locker = h.ds.createQueryRunner();
    await locker.startTransaction();
    try {
      await locker.query(`SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, [id]);
      const beatAt = async () => (await h.ds.query(`SELECT beat_at FROM workers WHERE id = $1`, [w.identity.id]))[0].beat_at.getTime();
      const before = await beatAt();
      let renewed = false;
      const renewal = w.heartbeat.renewLeases().then(() => (renewed = true));
      await w.heartbeat.beat();
      expect(renewed).toBe(false); // still waiting for the row
      expect(await beatAt()).toBeGreaterThan(before);
      await locker.rollbackTransaction();
      await renewal;
      expect((await h.ds.query(`SELECT progress FROM jobs WHERE id = $1`, [id]))[0].progress).toMatchObject({ percent: 40 });
    } finally {
      if (locker.isTransactionActive) await locker.rollbackTransaction();
      await locker.release();
      progressGate.release();
      await w.taker.close(10_000);
    }
  });

  it("renews the limit slot of a job still running, so a long handler keeps its tenant's maxConcurrency slot", async () => {
    const [id] = await h.enqueue([{ kind: 'slow', tenantId: 1 }]);
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 1 }]]));
    await h.hot.runOnce();
    const w = h.worker();
    await h.startWorker(w);
    await slowGate.started;
    const slots = `${h.ready.prefix}:almanac:limit:1:c`; // the tenant's slots on one Redis server (lua-common.ts)
    const member = `${id}@${w.identity.id}`;
    await h.redis.connection.zadd(slots, 'XX', 1, member); // as if it were about to expire
    await h.redis.connection.pexpire(slots, 5000); // the set too: a tenant at its limit takes nothing, and no take renews it
    await w.taker.renewSlots();
    expect(Number(await h.redis.connection.zscore(slots, member))).toBeGreaterThan(Date.now() + SLOT_TTL_MS - 5000);
    expect(await h.redis.connection.pttl(slots)).toBeGreaterThan(SLOT_TTL_MS);
    slowGate.release();
    await w.taker.close(10_000);
    expect(await h.redis.connection.zscore(slots, member)).toBeNull(); // finished: the slot is freed
  });

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

  it("a release at shutdown that wins the row from its handler's transaction gives the hint back to its pool", async () => {
    const [id] = await h.enqueue([{ kind: 'charge', payload: { invoiceId: 'inv-4', amountCents: 100 } }]);
    await h.hot.runOnce();
    const w = h.worker();
    // The handler is done; its completion, in its own transaction, waits until the release has landed.
    const finishing = gate();
    const real = h.repo.complete.bind(h.repo);
    jest.spyOn(h.repo, 'complete').mockImplementationOnce(async (...args: Parameters<typeof real>) => {
      finishing.onStart();
      await finishing.released;
      return real(...args);
    });
    const running = h.runWorker(w);
    await finishing.started;
    expect(await w.executor.releaseUnfinished()).toEqual(new Map([['default', [id]]]));
    finishing.release();
    await running;
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1 });
    expect(await chargeCount(h)).toBe(0);
    expect(await h.readyIds()).toEqual([id]); // back in its pool, not waiting for the overdue sweep
  });

  it('graceful shutdown lets a handler that finishes before the deadline complete normally', async () => {
    const [id] = await h.enqueue([{ kind: 'slow' }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.startWorker(w);
    await slowGate.started;
    const closing = w.taker.close(10_000);
    slowGate.release();
    expect(await closing).toEqual({ released: 0 });
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });
});
