import { DELIVERY_LEAD_MS } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { defineHandler, retry } from '@almanac/kinds';
import { noopHandler } from '@almanac/testing/built-in-kinds';
import { envelopeOf } from '@almanac/testing/promoter-rows';
import { pushHints } from '@almanac/testing/ready-hints';
import { SkewedClock } from '@almanac/testing/skewed-clock';

describe('a worker whose clock is off', () => {
  let h: DeliveryHarness;
  const later = defineHandler<unknown>({ kind: 'later', timeoutMs: 5000, handle: async () => retry({ delayMs: 10_000 }) });
  beforeEach(async () => (h = await createHarness({ handlers: [noopHandler, later] })));
  afterEach(() => destroyHarness(h));

  it('5 s slow, claims and runs a due job at once: due times go by the database clock, set at its beat', async () => {
    const w = h.worker({ clock: new SkewedClock(-5000) });
    const [id] = await h.enqueue([{ kind: 'noop' }]);
    await h.hot.runOnce();
    const t0 = Date.now();
    expect(await h.runWorker(w)).toBe(1);
    expect(Date.now() - t0).toBeLessThan(1000); // by its own clock the job is 5 s ahead: it would wait, then hand the hint back
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
    expect(Math.abs((await h.attempts(id))[0].started_at.getTime() - Date.now())).toBeLessThan(1000);
  });

  it('5 s fast, takes and claims nothing before it is due by the database clock', async () => {
    const w = h.worker({ clock: new SkewedClock(5000) });
    const runAt = new Date(Date.now() + 400);
    const [id] = await h.enqueue([{ kind: 'noop', runAt }]);
    await pushHints(h.ready, 'default', [h.hint(id, { kind: 'noop', runAt })]);
    expect(await h.runWorker(w)).toBe(0); // by its own clock it was due at once
    expect(await h.readyIds()).toEqual([id]);
    let ran = 0;
    while (ran === 0) ran = await h.runWorker(w);
    expect(Date.now()).toBeGreaterThanOrEqual(runAt.getTime());
    expect(await h.job(id)).toMatchObject({ state: 'd', attempts: 1 });
  });

  it("5 s fast, a retry's hint is stamped with the database's time its delay counts from: by the host's, it fired 5 s late", async () => {
    const [id] = await h.enqueue([{ kind: 'later' }]);
    await h.hot.runOnce();
    const realNow = Date.now.bind(Date);
    const fast = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 5000); // this host, BullMQ's stamp included
    try {
      const w = h.worker();
      await w.identity.register(); // its beat sets the database clock's offset
      expect(await h.runWorker(w)).toBe(1);
    } finally {
      fast.mockRestore();
    }
    const held = await envelopeOf(h.hotQueue, id);
    const [row] = await h.ds.query<{ run_at: Date }[]>(`SELECT run_at FROM jobs WHERE id = $1`, [id]);
    const firesAt = held!.job.timestamp + (held!.job.opts.delay ?? 0);
    expect(Math.abs(firesAt - (row.run_at.getTime() - DELIVERY_LEAD_MS))).toBeLessThan(1000);
  });
});
