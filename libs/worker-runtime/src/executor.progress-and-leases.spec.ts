import { DEFAULT_SHARE } from '@almanac/domain';
import { SLOT_TTL_MS } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { executorHandlers, progressGate, renewHandlerState, slowGate } from '@almanac/testing/executor-rig';

/** The worker executor while a handler runs: its progress and leases written with the heartbeat, its limit slot renewed, its lease judged by the database's clock. */
describe('worker executor', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    renewHandlerState();
    h = await createHarness({ handlers: executorHandlers() });
  });
  afterEach(() => destroyHarness(h));

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
});
