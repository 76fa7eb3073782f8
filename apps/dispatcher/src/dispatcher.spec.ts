import { completed, defineHandler, KindCatalog } from '@almanac/kinds';
import { DEFAULT_SHARE, type Hint } from '@almanac/domain';
import { COARSE_WINDOW_MS, DELIVERY_LEAD_MS, ENVELOPE_MAX_ROWS, hintsOf, ManualClock, REFINE_LEAD_MS, WINDOW_PART_ROWS } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { KindsRepository } from '@almanac/persistence';
import { BULK_ROWS } from './dispatcher';
import { PoolObserver } from './pool-observer';

// The dispatcher never runs handlers: stand-ins for the worker's kinds are enough here.
const noop = defineHandler({ kind: 'noop', timeoutMs: 1000, handle: async () => completed() });
const charge = defineHandler({ kind: 'charge', timeoutMs: 1000, handle: async () => completed() });

async function gauge(h: DeliveryHarness, name: 'poolWorkers' | 'poolCapacity' | 'poolInFlight' | 'poolBacklog', pool = 'default'): Promise<number> {
  const m = await h.metrics[name].get();
  return m.values.find((v) => v.labels.pool === pool)?.value ?? 0;
}

describe('dispatcher', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    h = await createHarness({ handlers: [noop, charge], poolMap: new Map([['charge', 'billing']]) });
  });
  afterEach(() => destroyHarness(h));

  /** A harness on a manual clock, and two rows in the coarse window of a minute 3 windows ahead. */
  async function twoRowsInACoarseWindow(): Promise<{ clock: ManualClock; minute: number; ids: string[] }> {
    const clock = new ManualClock(Date.now());
    await destroyHarness(h);
    h = await createHarness({ handlers: [noop], clock });
    const minute = Math.floor((Date.now() + 3 * COARSE_WINDOW_MS) / COARSE_WINDOW_MS) * COARSE_WINDOW_MS;
    const ids = await h.enqueue([{ kind: 'noop', runAt: new Date(minute + 10) }, { kind: 'noop', runAt: new Date(minute + 40_000) }]);
    return { clock, minute, ids };
  }

  it("keeps the pools' copy of tenants' limits and suspensions while its first read of them fails (a dispatcher just started)", async () => {
    await h.ready.syncShares('default', new Map([[7, { ...DEFAULT_SHARE, held: true }]])); // as a dispatcher already running wrote it
    const { routes, ready, workers, metrics, logger, clock } = h;
    const catalog = new KindCatalog(new KindsRepository(h.ds), { maxAgeMs: 0, missRefreshMs: 0 });
    const tenants = { listShares: () => Promise.reject(new Error('canceling statement due to lock timeout')) };
    await new PoolObserver({ routes, ready, workers, metrics, logger, clock, catalog, tenants }).runOnce();
    expect(await h.redis.connection.hget(`${h.ready.base('default')}:shares`, '7')).not.toBeNull();
  });

  it('hands due rows to their pools without touching them (no attempt, no lease) and leaves nothing of the envelope behind', async () => {
    const ids = await h.enqueue([{ kind: 'noop' }, { kind: 'noop' }, { kind: 'charge', payload: { invoiceId: 'i', amountCents: 1 } }]);
    expect(await h.hotQueue.queue.getJobCountByTypes('waiting')).toBe(1); // one envelope, whatever the kinds
    expect(await h.hot.runOnce()).toBe(3);
    for (const id of ids) expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0, lease_until: null, claimed_by: null });
    expect(await h.hotQueue.queue.getJobCountByTypes('waiting', 'active', 'completed', 'failed')).toBe(0);
    // Rows due together go in id order, and ids made in one millisecond are not in insertion order.
    expect(await h.readyIds('default')).toEqual(ids.slice(0, 2).sort());
    expect(await h.readyIds('billing')).toEqual([ids[2]]);
  });

  it("lands a hand-off of a few rows behind at most two bulk ones, not behind a whole burst's", async () => {
    const dueMs = Date.now();
    const bulk = (e: number) => [{ tenantId: 1, kind: 'noop', items: Array.from({ length: BULK_ROWS + 1 }, (_, i) => `${e * 1000 + i + 1}:${dueMs}`) }];
    const landed: string[] = [];
    const handOffs = Array.from({ length: 10 }, (_, e) => h.dispatcher.handOff(bulk(e)).then(() => landed.push(`bulk-${e}`)));
    handOffs.push(h.dispatcher.handOff([{ tenantId: 2, kind: 'noop', items: [`99999:${dueMs}`] }]).then(() => landed.push('small')));
    await Promise.all(handOffs);
    expect(landed.indexOf('small')).toBeLessThanOrEqual(2); // one connection answers in order: without the bound, 10th
    expect(landed.filter((l) => l !== 'small')).toEqual(Array.from({ length: 10 }, (_, e) => `bulk-${e}`));
    expect(await h.readyIds()).toHaveLength(10 * (BULK_ROWS + 1) + 1);
  });

  it("keeps a flow's hand-offs in order: a few rows of a flow a waiting bulk hand-off carries wait behind it", async () => {
    const dueMs = Date.now();
    const rowsOf = (from: number, n: number) => Array.from({ length: n }, (_, i) => `${from + i}:${dueMs + from + i}`);
    const handOffs = [0, 1, 2].map((e) => h.dispatcher.handOff([{ tenantId: 1, kind: 'noop', items: rowsOf(1 + e * 1000, BULK_ROWS + 1) }]));
    handOffs.push(h.dispatcher.handOff([{ tenantId: 1, kind: 'noop', items: rowsOf(5000, 1) }])); // the burst's last rows
    await Promise.all(handOffs);
    const ids = (await h.readyIds()).map(Number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b)); // due order
  });

  it('with no live worker, a burst waits whole in its pool in Redis, in due order, costing no attempt', async () => {
    const t0 = Date.now();
    const ids = await h.enqueue(Array.from({ length: 1500 }, (_, i) => ({ kind: 'noop', runAt: new Date(t0 - 1500 + i) })));
    expect(await h.hot.runOnce()).toBe(1500);
    expect(await h.readyIds()).toEqual(ids);
    await h.observer.runOnce();
    expect(await gauge(h, 'poolWorkers')).toBe(0);
    expect(await gauge(h, 'poolBacklog')).toBe(1500);
    const [{ q }] = await h.ds.query(`SELECT count(*) FILTER (WHERE state = 'q' AND attempts = 0)::int AS q FROM jobs`);
    expect(q).toBe(1500);
  });

  it("gauges a pool from its workers' beats and its ready lists: capacity, jobs in flight, jobs waiting", async () => {
    const w = await h.liveWorker({ concurrency: 2 });
    await h.enqueue(Array.from({ length: 5 }, () => ({ kind: 'noop' })));
    await h.hot.runOnce();
    await h.observer.runOnce();
    expect([await gauge(h, 'poolWorkers'), await gauge(h, 'poolCapacity'), await gauge(h, 'poolInFlight'), await gauge(h, 'poolBacklog')]).toEqual([1, 2, 0, 5]);
    await w.heartbeat.leave(); // SIGTERM: draining, its capacity no longer counts
    await h.observer.runOnce();
    expect([await gauge(h, 'poolWorkers'), await gauge(h, 'poolCapacity')]).toEqual([0, 0]);
  });

  it('counts a worker of two pools in flight in the pool its handlers run in, and its capacity in both', async () => {
    const w = await h.liveWorker({ pools: ['default', 'billing'], concurrency: 4 });
    await w.identity.beat([3, 0], false); // three handlers running in `default`, none in `billing`
    await h.observer.runOnce();
    expect([await gauge(h, 'poolInFlight'), await gauge(h, 'poolInFlight', 'billing')]).toEqual([3, 0]);
    expect([await gauge(h, 'poolCapacity'), await gauge(h, 'poolCapacity', 'billing')]).toEqual([4, 4]);
  });

  it("a worker whose beat is older than the dead limit by the database's clock is no capacity", async () => {
    await h.liveWorker();
    await h.ds.query(`UPDATE workers SET beat_at = now() - interval '6 seconds'`);
    await h.observer.runOnce();
    expect(await gauge(h, 'poolWorkers')).toBe(0);
  });

  it('routes a kind to the pool its worker registered, without the dispatcher knowing the handler', async () => {
    const report = defineHandler({ kind: 'report', timeoutMs: 1000, pool: 'reports', handle: async () => completed() });
    (h.registry as unknown as { byKind: Map<string, unknown> }).byKind.set('report', report);
    await h.liveWorker({ pools: ['reports'] });
    const [id] = await h.enqueue([{ kind: 'report' }]);
    await h.hot.runOnce();
    expect(await h.readyIds('reports')).toEqual([id]);
  });

  it('hands an envelope over as it comes out, DELIVERY_LEAD_MS before its first row is due: the row waits in its pool', async () => {
    const dueMs = Date.now() + 400;
    const [id] = await h.enqueue([{ kind: 'noop', runAt: new Date(dueMs) }]);
    h.hot.start();
    let seenAt = 0;
    for (const until = dueMs + 2000; Date.now() < until && seenAt === 0; ) {
      if ((await h.readyIds()).includes(id)) seenAt = Date.now();
      else await new Promise((r) => setTimeout(r, 2));
    }
    expect(seenAt).toBeGreaterThanOrEqual(dueMs - DELIVERY_LEAD_MS - 5);
    expect(seenAt).toBeLessThan(dueMs);
  });

  it('sends the rows of a coarse window back in fine envelopes when its minute comes near, even after a dispatcher died holding it', async () => {
    const { clock, minute, ids } = await twoRowsInACoarseWindow();
    const [coarse, ...none] = await h.hotQueue.queue.getDelayed();
    expect(none).toEqual([]);
    expect(coarse.data.w).toBe(minute);
    expect((await h.hotQueue.windows.peek(minute)).map((x) => x.id)).toEqual(ids);
    clock.set(minute - REFINE_LEAD_MS); // it comes out REFINE_LEAD_MS before its minute
    await h.hotQueue.windows.drain(minute, clock.now().getTime()).next(); // by a dispatcher that died then: the rows stay for the retry
    await coarse.promote();
    expect(await h.hot.runOnce()).toBe(0);
    expect(await h.hotQueue.windows.peek(minute)).toEqual([]); // handed on: the window is cleared
    const fine = (await h.hotQueue.queue.getDelayed()).sort((x, y) => (x.opts.delay ?? 0) - (y.opts.delay ?? 0));
    expect(fine.map((j) => hintsOf(j.data).map((x) => x.id))).toEqual([[ids[0]], [ids[1]]]);
    expect(fine.map((j) => j.opts.delay)).toEqual([REFINE_LEAD_MS + 10 - DELIVERY_LEAD_MS, REFINE_LEAD_MS + 40_000 - DELIVERY_LEAD_MS]);
  });

  it("sends a coarse window's reads and writes that Redis refuses again, so its rows are not left for the overdue sweep", async () => {
    const { clock, minute, ids } = await twoRowsInACoarseWindow();
    const [coarse] = await h.hotQueue.queue.getDelayed();
    clock.set(minute - REFINE_LEAD_MS);
    await coarse.promote();
    const refused = new Error('LOADING Redis is loading the dataset in memory');
    const enqueue = h.hotQueue.enqueue.bind(h.hotQueue);
    let firstOpenAt = 0;
    const spies = [
      // Its first read, the one that opens it.
      jest.spyOn(h.hotQueue.windows as unknown as { read(): Promise<string[]> }, 'read').mockImplementationOnce(() => ((firstOpenAt = Date.now()), Promise.reject(refused))),
      // Its envelopes land, its reply is lost: sent again, it adds nothing twice.
      jest.spyOn(h.hotQueue, 'enqueue').mockImplementationOnce(async (...args) => (await enqueue(...args), Promise.reject(refused))),
      jest.spyOn(h.hotQueue.windows, 'clear').mockRejectedValueOnce(refused),
    ];
    expect(await h.hot.runOnce()).toBe(0);
    expect(spies.map((s) => s.mock.calls.length)).toEqual([2, 2, 2]); // each refused once, then sent again
    expect(await h.hotQueue.windows.peek(minute)).toEqual([]);
    const fine = (await h.hotQueue.queue.getDelayed()).sort((x, y) => (x.opts.delay ?? 0) - (y.opts.delay ?? 0));
    expect(fine.map((j) => hintsOf(j.data).map((x) => x.id))).toEqual([[ids[0]], [ids[1]]]);
    // Their delays count from the hand-over's start, not from the try after the 100 ms pause.
    for (const j of fine) expect(j.timestamp).toBeLessThanOrEqual(firstOpenAt);
  });

  /** `n` hints in the window of `minute`, due across it, from many flows (one-row items) and a few big ones (100-row items). */
  function spreadOver(minute: number, n: number): Hint[] {
    return Array.from({ length: n }, (_, i): Hint => ({ id: String(1_000_000 + i), tenantId: i % 10 === 0 ? 1_000 + i : 1 + (i % 3), kind: 'noop', dueMs: minute + ((i * 7919) % COARSE_WINDOW_MS) }));
  }

  it("sends a coarse window of several parts on part by part, each part's envelopes added before the next is read, every row once", async () => {
    const { clock, minute, ids } = await twoRowsInACoarseWindow();
    const rows = spreadOver(minute, 2 * WINDOW_PART_ROWS + 5_000); // 3 parts; 12,500 one-row items: 7 pages
    for (let i = 0; i < rows.length; i += 20_000) await h.hotQueue.enqueue(rows.slice(i, i + 20_000), clock.now());
    const [coarse] = await h.hotQueue.queue.getDelayed();
    clock.set(minute - REFINE_LEAD_MS);
    await coarse.promote();
    const sent = jest.spyOn(h.hotQueue, 'enqueue');
    const read = jest.spyOn(h.hotQueue.windows as unknown as { read(): Promise<string[]> }, 'read');
    expect(await h.hot.runOnce(1)).toBe(0);
    // Whole, the window went in one enqueue of all its rows; a part holds at most an item (100 rows) more.
    const sizes = sent.mock.calls.map(([hints]) => hints.length);
    expect(sizes).toHaveLength(3);
    for (const n of sizes) expect(n).toBeLessThan(WINDOW_PART_ROWS + 100);
    expect(sent.mock.invocationCallOrder[0]).toBeLessThan(read.mock.invocationCallOrder[read.mock.calls.length - 1]); // before the last page is read
    expect(await h.hotQueue.windows.peek(minute)).toEqual([]);
    const held = (await h.hotQueue.queue.getDelayed()).flatMap((j) => hintsOf(j.data).map((x) => x.id));
    expect(held.sort()).toEqual([...ids, ...rows.map((x) => x.id)].sort());
  }, 60_000);

  it('sends every row of a coarse window on when its job is retried after a dispatcher died between its parts, each once while it waits', async () => {
    const { clock, minute, ids } = await twoRowsInACoarseWindow();
    const rows = spreadOver(minute, WINDOW_PART_ROWS + 5_000);
    await h.hotQueue.enqueue(rows, clock.now());
    const [coarse] = await h.hotQueue.queue.getDelayed();
    clock.set(minute - REFINE_LEAD_MS);
    for await (const part of h.hotQueue.windows.drain(minute, clock.now().getTime())) {
      await h.hotQueue.enqueue(part, clock.now()); // the first part handed on, then the dispatcher died
      break;
    }
    clock.set(minute - REFINE_LEAD_MS + 2_000); // the retry comes out later (BullMQ's stalled check)
    await coarse.promote();
    expect(await h.hot.runOnce(1)).toBe(0);
    expect(await h.hotQueue.windows.peek(minute)).toEqual([]);
    const held = (await h.hotQueue.queue.getDelayed()).flatMap((j) => hintsOf(j.data).map((x) => x.id));
    expect(held.sort()).toEqual([...ids, ...rows.map((x) => x.id)].sort()); // the first part's envelopes added again are the same jobs
  }, 60_000);

  it('a coarse window opened after its minute began sends even a burst of 200,000 rows on, in envelopes of at most ENVELOPE_MAX_ROWS', async () => {
    const clock = new ManualClock(Date.now());
    await destroyHarness(h);
    h = await createHarness({ handlers: [noop], clock });
    const minute = Math.floor((Date.now() + 3 * COARSE_WINDOW_MS) / COARSE_WINDOW_MS) * COARSE_WINDOW_MS;
    const burst = Array.from({ length: 200_000 }, (_, i): Hint => ({ id: String(1_000_000 + i), tenantId: 1, kind: 'noop', dueMs: minute + 10 }));
    for (let i = 0; i < burst.length; i += 5000) await h.hotQueue.enqueue(burst.slice(i, i + 5000), clock.now());
    const [coarse] = await h.hotQueue.queue.getDelayed();
    clock.set(minute + 60_000); // a dispatcher was down when it came out: every row is due
    await coarse.promote();
    expect(await h.hot.runOnce(1)).toBe(0);
    expect(await h.hotQueue.windows.peek(minute)).toEqual([]);
    const envelopes = await h.hotQueue.queue.getWaiting();
    expect(envelopes.map((j) => hintsOf(j.data).length)).toEqual(Array(200).fill(ENVELOPE_MAX_ROWS));
    expect(await h.hot.runOnce()).toBe(200_000);
    expect(await h.readyIds()).toEqual(burst.map((x) => x.id)); // each once, in due (and id) order
  }, 60_000);

  it('a repair puts rows older than their flow\'s head at its head, and lands every row of a repair split over envelopes', async () => {
    const t0 = Date.now();
    const [a] = await h.enqueue([{ kind: 'noop', runAt: new Date(t0) }]);
    await h.hot.runOnce();
    const [{ id: lost }] = await h.ds.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES (1, 'lost', 'noop', $1, 'q') RETURNING id::text AS id`, [new Date(t0 - 60_000)]);
    await h.hotQueue.enqueue([{ id: lost, tenantId: 1, kind: 'noop', dueMs: t0 - 60_000 }], new Date(), { repair: true });
    await h.hot.runOnce();
    expect(await h.readyIds()).toEqual([lost, a]);
    // Redis lost everything: the sweep re-hints 1,500 rows of one flow, more than one envelope holds.
    await h.redis.connection.del(`${h.ready.base('default')}:q:1:noop`);
    const rows: { id: string }[] = await h.ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT 1, 'r' || i, 'noop', $1::timestamptz + i * interval '1 ms', 'q' FROM generate_series(1, 1500) i RETURNING id::text AS id`,
      [new Date(t0 - 30_000)],
    );
    await h.hotQueue.enqueue(rows.map((r, i) => ({ id: r.id, tenantId: 1, kind: 'noop', dueMs: t0 - 30_000 + i + 1 })), new Date(), { repair: true });
    await h.hot.runOnce();
    expect(new Set(await h.readyIds())).toEqual(new Set(rows.map((r) => r.id))); // all 1,500, not the first envelope's 1,000
    expect((await h.metrics.dispatched.get()).values.find((v) => v.labels.via === 'repair')?.value).toBe(1501);
  });

  it('sends a refused push again to its pool alone, holding the envelope, so its rows land at once instead of after the overdue sweep', async () => {
    const [a, b] = await h.enqueue([{ kind: 'noop' }, { kind: 'charge' }]);
    const pushFlows = h.ready.pushFlows.bind(h.ready);
    let refused = false;
    const push = jest.spyOn(h.ready, 'pushFlows').mockImplementation((pool, flows) => {
      if (pool !== 'billing' || refused) return pushFlows(pool, flows);
      refused = true;
      return Promise.reject(new Error('OOM command not allowed when used memory > maxmemory'));
    });
    const done = new Promise<void>((resolve) => h.hot.worker.once('completed', () => resolve()));
    h.hot.start();
    await done;
    expect(push.mock.calls.map(([pool]) => pool).sort()).toEqual(['billing', 'billing', 'default']);
    expect([await h.readyIds(), await h.readyIds('billing')]).toEqual([[a], [b]]); // each once
    expect(await h.hotQueue.queue.getJobCountByTypes('waiting', 'delayed', 'active', 'failed')).toBe(0);
  });

  it('an envelope whose hand-off failed past its retries leaves nothing behind, so the same hints can be added again', async () => {
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    const [envelope] = await h.hotQueue.queue.getWaiting();
    jest.spyOn(h.dispatcher, 'handOff').mockRejectedValueOnce(new Error('redis is down'));
    const logged = jest.spyOn(h.logger, 'error');
    const failed = new Promise<void>((resolve) => h.hot.worker.once('failed', () => resolve()));
    h.hot.start();
    await failed;
    await h.hot.close();
    expect(logged).toHaveBeenCalledWith(expect.objectContaining({ envelope: envelope.id, rows: 1 }), expect.stringMatching(/could not be handed off/));
    // A failed envelope kept under its id would turn a re-add of the same rows into a no-op.
    expect(await h.hotQueue.queue.getJob(envelope.id as string)).toBeUndefined();
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });
    await h.hotQueue.enqueue(hintsOf(envelope.data), new Date());
    expect(await h.hotIds('waiting')).toEqual([id]);
  });
});
