import { queueJobId } from '@almanac/persistence';
import { chargeHandler, noopHandler } from '../../worker/src/handlers';
import { createHarness, DeliveryHarness, destroyHarness } from '../../worker/src/testing/delivery-harness';

async function dropped(h: DeliveryHarness): Promise<Record<string, number>> {
  const m = await h.metrics.dropped.get();
  return Object.fromEntries(m.values.map((v) => [String(v.labels.reason), v.value]));
}

describe('dispatcher', () => {
  let h: DeliveryHarness;

  beforeEach(async () => {
    h = await createHarness({ handlers: [noopHandler, chargeHandler], poolMap: new Map([['charge', 'billing']]) });
  });
  afterEach(() => destroyHarness(h));

  it('claims due jobs in one batch: queued → running, attempt 1, lease, routed to the pool queue', async () => {
    const ids = await h.enqueue([{ kind: 'noop' }, { kind: 'noop' }, { kind: 'charge', payload: { invoiceId: 'i', amountCents: 1 } }]);
    const before = Date.now();
    expect(await h.hot.runOnce()).toBe(3);
    for (const id of ids) {
      const row = await h.job(id);
      expect(row).toMatchObject({ state: 'r', attempts: 1 });
      // lease = kind timeout + 60 s margin
      expect(row.lease_until!.getTime()).toBeGreaterThanOrEqual(before + 60_000);
      expect(await h.hotJobState(id)).toBe('absent'); // removeOnComplete
    }
    expect(await h.poolCounts('default')).toMatchObject({ waiting: 2 });
    expect(await h.poolCounts('billing')).toMatchObject({ waiting: 1 });
    const poolJob = await h.poolQueue('billing').getJob(`j-${ids[2]}-a1`);
    expect(poolJob?.data).toEqual({ id: ids[2], t: 1, a: 1, d: expect.any(Number) });
    expect(poolJob?.name).toBe('charge');
  });

  it('drops deliveries the row no longer wants, with a reason', async () => {
    const [cancelled, finished, cold, missing, dup] = await h.enqueue([
      { kind: 'noop' }, { kind: 'noop' }, { kind: 'noop' }, { kind: 'noop' }, { kind: 'noop' },
    ]);
    await h.ds.query(`UPDATE jobs SET state = 'c' WHERE id = $1`, [cancelled]);
    await h.ds.query(`UPDATE jobs SET state = 'd' WHERE id = $1`, [finished]);
    await h.ds.query(`UPDATE jobs SET state = 's', run_at = now() + interval '3 days' WHERE id = $1`, [cold]);
    await h.ds.query(`DELETE FROM jobs WHERE id = $1`, [missing]);
    await h.ds.query(`UPDATE jobs SET state = 'r', attempts = 1 WHERE id = $1`, [dup]);
    expect(await h.hot.runOnce()).toBe(5);
    expect(await dropped(h)).toEqual({ cancelled: 1, finished: 1, rescheduled: 1, missing: 1, running: 1 });
    expect(await h.poolCounts('default')).toMatchObject({ waiting: 0 });
    expect(await h.job(dup)).toMatchObject({ state: 'r', attempts: 1 });
  });

  it('puts an early delivery back until the row is due (rescheduled later within the hot horizon)', async () => {
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    const later = new Date(Date.now() + 3600_000);
    await h.ds.query(`UPDATE jobs SET run_at = $2 WHERE id = $1`, [id, later]);
    expect(await h.hot.runOnce()).toBe(1);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });
    const job = await h.hotQueue.queue.getJob(queueJobId(id));
    expect(await job?.getState()).toBe('delayed');
    expect((await dropped(h)).not_due).toBe(1);
  });

  it('two dispatchers racing over the same deliveries route each job once', async () => {
    const ids = await h.enqueue(Array.from({ length: 50 }, () => ({ kind: 'noop' })));
    const deliveries = ids.map((id) => ({ id, kind: 'noop', tenantId: 1, dueMs: Date.now() }));
    const [a, b] = await Promise.all([h.dispatcher.dispatch(deliveries), h.dispatcher.dispatch(deliveries)]);
    const routed = [...a, ...b].filter((r) => r.status === 'dispatched').length;
    expect(routed).toBe(50);
    const rows: { n: string }[] = await h.ds.query(`SELECT count(*) AS n FROM jobs WHERE state = 'r' AND attempts = 1`);
    expect(Number(rows[0].n)).toBe(50);
    expect(await h.poolCounts('default')).toMatchObject({ waiting: 50 });
  });

  it('a delivery whose dispatch failed leaves no hot job behind, so the sweeps can enqueue the row again', async () => {
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    jest.spyOn(h.dispatcher, 'dispatch').mockRejectedValueOnce(new Error('database is down'));
    const failed = new Promise<void>((resolve) => h.hot.worker.once('failed', () => resolve()));
    h.hot.start();
    await failed;
    await h.hot.close();
    // A failed job kept under j-<id> would turn every re-enqueue of the row into a no-op.
    expect(await h.hotJobState(id)).toBe('absent');
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 0 });
    await h.hotQueue.enqueue([{ id, runAt: new Date(), tenantId: 1, kind: 'noop' }], new Date());
    expect(await h.hotJobState(id)).toBe('waiting');
  });
});
