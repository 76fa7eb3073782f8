import { completed, defineHandler } from '@almanac/delivery';
import type { TenantShare } from '@almanac/domain';
import { DELIVERY_LEAD_MS, ManualClock } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import type { HotJobData } from '@almanac/platform';
import type { Job } from 'bullmq';
import type { HotDelivery } from './dispatcher';
import { fairFixtures } from './fair-fixtures';
import { HANDOFF_AHEAD_MS } from './hot-consumer';

const noop = defineHandler({ kind: 'noop', timeoutMs: 1000, handle: async () => completed() });
const http = defineHandler({ kind: 'http', timeoutMs: 1000, handle: async () => completed() });

describe('fair dispatch between tenants', () => {
  let h: DeliveryHarness;
  let fx: ReturnType<typeof fairFixtures>;
  const tenant = (name: string, share?: Partial<TenantShare>) => fx.tenant(name, share);
  const deliveries = (tenantId: number, n: number, opts?: { kind?: string; mayWait?: boolean }) => fx.deliveries(tenantId, n, opts);

  beforeEach(async () => {
    h = await createHarness({ handlers: [noop, http] });
    fx = fairFixtures(h);
  });
  afterEach(() => destroyHarness(h));

  /**
   * A pool with room 2 and a heavy tenant's 50 jobs waiting in its line (memory full, the harness
   * lets 50 wait), the heavy tenant served once; a quiet tenant's row made but not delivered.
   */
  async function memoryFull() {
    const heavy = await tenant('heavy');
    const quiet = await tenant('quiet');
    await h.liveWorker({ concurrency: 1 });
    const burst = await deliveries(heavy, 53);
    const [one] = await deliveries(quiet, 1); // made first: the line parks if its pool frees no room for 500 ms
    await h.dispatcher.dispatch(burst.slice(0, 52));
    const first = h.dispatcher.waitForRoom('default', burst.slice(2, 3));
    const rest = h.dispatcher.waitForRoom('default', burst.slice(3, 52));
    await h.ready.take('default', 1);
    expect(await first).toEqual(['handed_off']); // the heavy tenant has been served: its next start is later
    return { burst, one, rest };
  }

  async function tenantsOf(ids: string[]): Promise<number[]> {
    const rows: { id: string; tenant_id: number }[] = await h.ds.query(`SELECT id::text, tenant_id FROM jobs WHERE id = ANY($1::bigint[])`, [ids]);
    const byId = new Map(rows.map((r) => [r.id, r.tenant_id]));
    return ids.map((id) => byId.get(id) as number);
  }

  it("a light tenant's job goes next, at the head of the ready list when the light lane is full, however long a heavy tenant's line", async () => {
    const heavy = await tenant('heavy');
    const quiet = await tenant('quiet');
    await h.liveWorker({ concurrency: 2 }); // room 4, a light lane of 1
    await h.ready.push('default', [], [], [{ id: '1', dueMs: Date.now() }]); // the light lane is full
    const burst = await deliveries(heavy, 20);
    const [one] = await deliveries(quiet, 1); // made first: the line parks if its pool frees no room for 500 ms
    expect((await h.dispatcher.dispatch(burst)).filter((a) => a.status === 'full')).toHaveLength(16);
    const first = h.dispatcher.waitForRoom('default', burst.slice(4, 6));
    const rest = h.dispatcher.waitForRoom('default', burst.slice(6));
    await h.ready.take('default', 2); // a worker took two: the line hands the next two of the heavy tenant
    expect(await first).toEqual(['handed_off', 'handed_off']);

    expect(await h.dispatcher.dispatch([one])).toEqual([{ status: 'full', pool: 'default' }]); // behind the line, in it
    const quietWait = h.dispatcher.waitForRoom('default', [one]);
    await h.ready.take('default', 1);
    expect(await quietWait).toEqual(['handed_off']);
    expect((await h.readyIds())[0]).toBe(one.id); // ahead of the heavy tenant's 14 waiting and 3 ready

    h.dispatcher.stopWaiting();
    expect(new Set(await rest)).toEqual(new Set(['parked']));
  });

  it("with no line waiting, a tenant's first job in a while goes to the head of the ready list; a stream of them does not", async () => {
    const heavy = await tenant('heavy');
    const quiet = await tenant('quiet');
    await h.liveWorker({ concurrency: 16 }); // room 32: everything below goes directly
    await h.dispatcher.dispatch(await deliveries(heavy, 20));
    const [one, two] = await deliveries(quiet, 2);
    await h.dispatcher.dispatch([one]);
    await h.dispatcher.dispatch([two]); // the same tenant at once: not sparse any more
    const ids = await h.readyIds();
    expect(ids[0]).toBe(one.id); // before: behind the heavy tenant's 19 still waiting
    expect(ids[ids.length - 1]).toBe(two.id);
  });

  it("a light tenant's job goes to the pool's light lane though the pool has no room; a heavy tenant's do not", async () => {
    const heavy = await tenant('heavy');
    const quiet = await tenant('quiet');
    await h.liveWorker({ concurrency: 16 }); // room 32; a light lane of 1 (1/16 of 16)
    const burst = await deliveries(heavy, 38);
    const [one] = await deliveries(quiet, 1);
    const answers = await h.dispatcher.dispatch(burst);
    expect(answers.filter((a) => a.status === 'full')).toHaveLength(6);
    const rest = h.dispatcher.waitForRoom('default', burst.slice(32)); // not light: six waiting
    expect(await h.dispatcher.dispatch([one])).toEqual([{ status: 'full', pool: 'default' }]);
    // No worker takes anything: before, it waited for room (and parked when the line stalled).
    expect(await h.dispatcher.waitForRoom('default', [one])).toEqual(['handed_off']);
    expect((await h.ready.take('default', 10, true)).map((i) => i.id)).toEqual([one.id]);
    expect(await h.readyIds()).toHaveLength(32); // the heavy tenant's six still wait for room
    h.dispatcher.stopWaiting();
    expect(await rest).toEqual(Array(6).fill('parked'));
  });

  it("a light tenant's job behind a full pool is not held to its hand-off time: its light slot waits, not the path", async () => {
    const heavy = await tenant('heavy');
    const quiet = await tenant('quiet');
    await h.liveWorker({ concurrency: 16 }); // room 32
    const now = Date.now();
    const single = (t: number) => ({ t, d: now + DELIVERY_LEAD_MS });
    const held = DELIVERY_LEAD_MS - HANDOFF_AHEAD_MS;
    expect(h.hot.holdMs('noop', single(quiet), now)).toBe(held); // an idle pool: held as ever

    const burst = await deliveries(heavy, 38);
    await h.dispatcher.dispatch(burst);
    const rest = h.dispatcher.waitForRoom('default', burst.slice(32)); // the pool is full: a line waits
    expect(h.hot.holdMs('noop', single(quiet), now)).toBe(0);
    expect(h.hot.holdMs('noop', single(heavy), now)).toBe(held); // it has jobs waiting: not light
    expect(h.hot.holdMs('noop', { ...single(quiet), ids: ['1', '2'] }, now)).toBe(held); // an envelope: a burst
    h.dispatcher.stopWaiting();
    await rest;
  });

  it("splits a pool's room between parked tenants by weight when the backlog refills", async () => {
    const light = await tenant('light');
    const heavy = await tenant('heavy', { weight: 3 });
    for (const t of [light, heavy]) await h.dispatcher.dispatch(await deliveries(t, 40, { mayWait: false })); // no worker: parked
    await h.liveWorker({ concurrency: 10 }); // room 20 (liveWorker observes: weights and parked counts)
    expect(await h.dispatcher.refillOnce()).toBe(20);
    const handed = await tenantsOf(await h.readyIds());
    expect(handed.filter((t) => t === light)).toHaveLength(5);
    expect(handed.filter((t) => t === heavy)).toHaveLength(15);
  });

  it('a tenant with parked jobs has new ones parked behind them; another tenant is handed its jobs directly', async () => {
    const a = await tenant('a');
    const b = await tenant('b');
    const early = await deliveries(a, 2, { mayWait: false });
    await h.dispatcher.dispatch(early); // no worker: parked
    await h.liveWorker();
    const [lateA] = await deliveries(a, 1);
    const [lateB] = await deliveries(b, 1);
    expect((await h.dispatcher.dispatch([lateA, lateB])).map((r) => r.status)).toEqual(['parked', 'handed_off']);
    expect(await h.readyIds()).toEqual([lateB.id]);
  });

  it('maxConcurrency caps what a tenant has handed out and unfinished; slots come back as runs end', async () => {
    const clock = new ManualClock(Date.now());
    await destroyHarness(h);
    h = await createHarness({ handlers: [noop, http], clock });
    fx = fairFixtures(h);
    const capped = await tenant('capped', { maxConcurrency: 3 });
    const w = await h.liveWorker({ concurrency: 10 }); // room 20
    await h.dispatcher.observe();
    const jobs = await deliveries(capped, 8);
    expect(new Set((await h.dispatcher.dispatch(jobs)).map((r) => r.status))).toEqual(new Set(['full'])); // limited: through the line's gate
    const outcomes = await Promise.all(jobs.map((d) => h.dispatcher.waitForRoom('default', [d])));
    // Three go; the limit parks the rest at once (their hot jobs must not wait out the limit).
    expect(outcomes.flat()).toEqual([...Array(3).fill('handed_off'), ...Array(5).fill('parked')]);
    expect(await h.readyIds()).toHaveLength(3);
    expect(await h.slots.held(capped)).toBe(3);
    expect(await w.taker.runOnce()).toBe(3); // run, recorded, slots released
    expect(await h.slots.held(capped)).toBe(0);
    clock.advance(20); // past the gate's recheck pause
    await h.dispatcher.refillOnce(); // the parked five come back through the gate: three go
    expect(await h.readyIds()).toHaveLength(3);
    expect(await h.slots.held(capped)).toBe(3);
    h.dispatcher.stopWaiting();
  });

  it("a capped tenant's jobs go to the head of the ready list: a concurrency slot is not spent waiting behind other tenants' jobs", async () => {
    const heavy = await tenant('heavy');
    const capped = await tenant('capped', { maxConcurrency: 5 });
    await h.liveWorker({ concurrency: 2 }); // room 4
    await h.dispatcher.observe();
    const [c1, c2] = await deliveries(capped, 2);
    expect((await h.dispatcher.dispatch(await deliveries(heavy, 4))).map((a) => a.status)).toEqual(Array(4).fill('handed_off'));
    expect((await h.dispatcher.dispatch([c1, c2])).map((a) => a.status)).toEqual(['full', 'full']);
    const first = h.dispatcher.waitForRoom('default', [c1]);
    const second = h.dispatcher.waitForRoom('default', [c2]);
    await h.ready.take('default', 1);
    expect(await first).toEqual(['handed_off']);
    await h.ready.take('default', 1); // a worker takes c1 (the head)
    expect(await second).toEqual(['handed_off']);
    expect((await h.readyIds())[0]).toBe(c2.id); // not a light tenant any more (c2 waited behind c1), still first
  });

  it("a kind limit holds only that kind: the tenant's other kinds and other tenants go on", async () => {
    const t = await tenant('t', { kindLimits: { http: { concurrency: 1 } } });
    await h.liveWorker({ concurrency: 10 });
    await h.dispatcher.observe();
    const webhooks = await deliveries(t, 3, { kind: 'http' });
    const plain = await deliveries(t, 2);
    const answers = await h.dispatcher.dispatch([...webhooks, ...plain]);
    expect(answers.map((a) => a.status)).toEqual(['full', 'full', 'full', 'handed_off', 'handed_off']);
    const waits = webhooks.map((d) => h.dispatcher.waitForRoom('default', [d]));
    expect(await waits[0]).toEqual(['handed_off']);
    expect(await h.slots.held(t, 'http')).toBe(1);
    h.dispatcher.stopWaiting();
    expect(await Promise.all(waits.slice(1))).toEqual([['parked'], ['parked']]);
  });

  it("a suspended tenant's due jobs are held (parked, still queued, no attempt) until it is enabled", async () => {
    const paused = await tenant('paused');
    const other = await tenant('other');
    await fx.tenants.setDisabled(paused, true);
    await h.liveWorker({ concurrency: 10 }); // observes: reads the suspension
    const held = await deliveries(paused, 3);
    const [fine] = await deliveries(other, 1);
    expect((await h.dispatcher.dispatch([...held, fine])).map((r) => r.status)).toEqual(['parked', 'parked', 'parked', 'handed_off']);
    expect(await h.dispatcher.refillOnce()).toBe(0); // room enough, but held
    for (const d of held) expect(await h.job(d.id)).toMatchObject({ state: 'q', attempts: 0 });
    await fx.tenants.setDisabled(paused, false);
    await h.dispatcher.observe();
    expect(await h.dispatcher.refillOnce()).toBe(3);
    expect(await h.readyIds()).toEqual(expect.arrayContaining(held.map((d) => d.id)));
  });

  it('a burst bigger than memory waits only as far as memory allows; the rest parks at once, and a light tenant in the same batch still waits', async () => {
    const heavy = await tenant('heavy');
    const quiet = await tenant('quiet');
    await h.liveWorker({ concurrency: 1 }); // room 2; the harness lets 50 wait
    const burst = await deliveries(heavy, 60);
    const [one] = await deliveries(quiet, 1);
    one.dueMs = Date.now() + 1000; // due after the burst: memory is full when its turn comes
    const answers = await h.dispatcher.dispatch([...burst, one]);
    const count = (status: string, from: typeof answers) => from.filter((a) => a.status === status).length;
    expect([count('handed_off', answers.slice(0, 60)), count('full', answers.slice(0, 60)), count('parked', answers.slice(0, 60))]).toEqual([2, 50, 8]);
    expect(answers[60].status).toBe('full');
  });

  it('when memory is short the tenant with the most waiting parks, not the newcomer', async () => {
    const { burst, one, rest } = await memoryFull();
    const extra = burst[52];
    expect(await h.dispatcher.dispatch([extra])).toEqual([{ status: 'full', pool: 'default' }]);
    const extraWait = h.dispatcher.waitForRoom('default', [extra]); // 50 waiting: memory is full
    expect(await h.dispatcher.dispatch([one])).toEqual([{ status: 'full', pool: 'default' }]); // not the largest: may wait
    const quietWait = h.dispatcher.waitForRoom('default', [one]);
    expect(await extraWait).toEqual(['parked']); // the largest tenant's newest made room
    await h.ready.take('default', 1);
    expect(await quietWait).toEqual(['handed_off']);
    h.dispatcher.stopWaiting();
    await rest;
    expect(await h.parkedIds()).not.toContain(one.id);
  });

  it("rows being parked do not hold the hot consumer's dispatch batcher: another tenant's job goes while their INSERTs wait", async () => {
    const paused = await tenant('paused');
    const other = await tenant('other');
    await fx.tenants.setDisabled(paused, true);
    await h.liveWorker({ concurrency: 10 }); // observes: reads the suspension (its rows park)
    const held = await deliveries(paused, 2);
    const [fine] = await deliveries(other, 1);
    const hotJob = (d: HotDelivery) => ({ id: `j-${d.id}`, name: d.kind, data: { t: d.tenantId, d: d.dueMs } }) as unknown as Job<HotJobData, unknown, string>;
    const blocker = await fx.lockBacklog();
    try {
      // The first batch's parking INSERT blocks; the second batch parks a row too, beside another
      // tenant's job. Before, each batch held one of the batcher's two slots until its INSERT landed.
      const parking = [h.hot.process(hotJob(held[0]))];
      await fx.insertsWaiting(1);
      parking.push(h.hot.process(hotJob(held[1])));
      expect(await h.hot.process(hotJob(fine))).toBe('handed_off');
      expect(await fx.lockWaiters()).toBe(1); // one parking INSERT at a time: the second batch's row waits its turn in memory
      await blocker.commitTransaction();
      expect(await Promise.all(parking)).toEqual(['parked', 'parked']);
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
    }
  });

  it("a refill keeps a flow whose rows are still on their way to the backlog: its newer rows park behind them", async () => {
    const t = await tenant('t');
    const [first, second] = await deliveries(t, 2);
    const hold = await fx.holdParkingInserts();
    try {
      const parked = h.dispatcher.dispatch([{ ...first, mayWait: false }]); // no live worker: parks
      await fx.insertsWaiting(1);
      await h.liveWorker({ concurrency: 10 }); // room now
      expect(await h.dispatcher.refillOnce()).toBe(0); // its row has not landed: nothing to take yet
      // Before, the refill dropped the flow and the newer row was handed off ahead of the older one.
      const next = await h.dispatcher.dispatchAside([second]);
      expect(next.results).toEqual([{ status: 'parked', pool: 'default' }]);
      await hold.release();
      expect(await parked).toEqual([{ status: 'parked', pool: 'default' }]);
      await next.parked;
    } finally {
      await hold.release().catch(() => undefined);
    }
  });

  it("a line's parking does not hold up its hand-off: a light tenant's job goes while the backlog's INSERT waits", async () => {
    const { burst, one, rest } = await memoryFull();
    const blocker = await fx.lockBacklog(); // a slow backlog: its INSERTs wait
    try {
      const extraWait = h.dispatcher.waitForRoom('default', [burst[52]]); // over memory: the largest tenant's newest park
      expect(await h.dispatcher.dispatch([one])).toEqual([{ status: 'full', pool: 'default' }]);
      const quietWait = h.dispatcher.waitForRoom('default', [one]);
      await h.ready.take('default', 1);
      expect(await quietWait).toEqual(['handed_off']); // before: the turn awaited its parking, behind the lock
      await blocker.commitTransaction();
      expect(await extraWait).toEqual(['parked']);
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
    }
    h.dispatcher.stopWaiting();
    await rest;
  });
});
