import { DUE_COLD_TENANTS_SQL, SweepsRepository } from '@almanac/persistence';
import { COARSE_WINDOW_MS, DELIVERY_LEAD_MS, hintsOf, HotQueue, MetricsService, REFINE_LEAD_MS } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { envelopeOf, insertJobs, inQueue, queuedCount, statesOf } from '@almanac/testing/promoter-rows';
import { PromotionSweep, type PromotionFaults } from './promotion.sweep';
import { SweepMetrics } from './sweep-metrics';

const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:20:00Z');

class SimulatedCrash extends Error {}

describe('PromotionSweep (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;
  let repo: SweepsRepository;
  let metrics: SweepMetrics;

  const sweep = (faults: PromotionFaults = {}, batchSize = 1000, maxPerRun = 1_000_000, concurrency = 1) =>
    new PromotionSweep(repo, queue, { hotHorizonMs: 24 * HOUR, batchSize, maxPerRun, concurrency }, metrics, faults);

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    repo = new SweepsRepository(db.dataSource);
    metrics = new SweepMetrics(new MetricsService());
  });
  beforeEach(async () => {
    queue = HotQueue.open(redis.connection, `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`);
    await db.dataSource.query('TRUNCATE jobs');
  });
  afterEach(async () => queue.close());
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it("a row whose promotion Postgres refuses on a value is set aside (dead, set_aside); every tenant's rows batched with it are promoted", async () => {
    await db.dataSource.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.key LIKE 'poison-%' AND NEW.state = 'q' THEN RAISE EXCEPTION 'value out of range' USING ERRCODE = '22003'; END IF; RETURN NEW; END $$`);
    await db.dataSource.query(`CREATE TRIGGER refuse_poison BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    try {
      const a = await insertJobs(db.dataSource, { count: 30, start: new Date('2026-11-29T12:00:00Z'), stepMs: 1000, tenantId: 1 });
      const [poison] = await insertJobs(db.dataSource, { count: 1, start: new Date('2026-11-29T12:00:05Z'), tenantId: 2, prefix: 'poison' });
      const b = await insertJobs(db.dataSource, { count: 30, start: new Date('2026-11-29T12:00:00Z'), stepMs: 1000, tenantId: 2 });
      const res = await sweep({}, 1000).runOnce(NOW);
      expect(res.promoted).toBe(60);
      expect(await statesOf(db.dataSource, [...a, ...b])).toEqual({ q: 60 });
      expect(await inQueue(queue, [...a, ...b])).toBe(60);
      const [row] = await db.dataSource.query(`SELECT state, last_error FROM jobs WHERE id = $1`, [poison]);
      expect(row).toEqual({ state: 'x', last_error: expect.stringContaining('in its promotion (SQLSTATE 22003)') });
      expect((await metrics.setAside.get()).values.filter((v) => v.value > 0)).toEqual([expect.objectContaining({ labels: { statement: 'promotion' }, value: 1 })]);
      expect((await sweep().runOnce(NOW)).promoted).toBe(0); // nothing left behind, nothing wedged
    } finally {
      await db.dataSource.query(`DROP TRIGGER refuse_poison ON jobs; DROP FUNCTION refuse_poison()`);
    }
  });

  it('promotes whole hour buckets up to hour(now + horizon), leaves later ones cold', async () => {
    // now + 24 h = 2026-11-30T10:20Z: its bucket [10:00, 11:00) is promoted whole (rounded up).
    const inside = await insertJobs(db.dataSource, { count: 10, start: new Date('2026-11-30T10:59:59.000Z') });
    const edge = await insertJobs(db.dataSource, { count: 1, start: new Date('2026-11-30T10:59:59.999Z') });
    const beyond = await insertJobs(db.dataSource, { count: 10, start: new Date('2026-11-30T11:00:00.000Z') });
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ promoted: 11, batches: 1 });
    expect(await statesOf(db.dataSource, [...inside, ...edge])).toEqual({ q: 11 });
    expect(await statesOf(db.dataSource, beyond)).toEqual({ s: 10 });
    expect(await inQueue(queue, inside)).toBe(10);
    expect(await inQueue(queue, beyond)).toBe(0);
    // A day ahead: one envelope for its coarse window, out a little before the window starts.
    const held = await envelopeOf(queue, inside[0]);
    const window = Math.floor(Date.parse('2026-11-30T10:59:59.000Z') / COARSE_WINDOW_MS) * COARSE_WINDOW_MS;
    const due = window - NOW.getTime() - REFINE_LEAD_MS;
    expect(held?.job.opts.delay).toBeLessThanOrEqual(due); // less what the run took so far
    expect(held?.job.opts.delay).toBeGreaterThan(due - 1000);
    expect(held?.hints).toEqual([...inside, ...edge].map((id, i) => ({ id, tenantId: 1, kind: 'noop', dueMs: new Date('2026-11-30T10:59:59.000Z').getTime() + (i === 10 ? 999 : 0) })));
  });

  it("reckons a batch's queue delays from its own time, not the run's start: BullMQ stamps the add, so a slow run's hints fired late", async () => {
    const [id] = await insertJobs(db.dataSource, { count: 1, start: new Date(NOW.getTime() + 60_000) });
    const slowStep = () => new Promise<void>((r) => setTimeout(r, 400)); // a long run: a million rows before this batch
    await sweep({ afterClaim: slowStep }).runOnce(NOW);
    const held = await envelopeOf(queue, id);
    expect(held?.job.opts.delay).toBeLessThanOrEqual(60_000 - DELIVERY_LEAD_MS - 400);
  });

  it('sends rows that are already overdue (promoter was down) with delay 0', async () => {
    const ids = await insertJobs(db.dataSource, { count: 5, start: new Date(NOW.getTime() - 3 * 24 * HOUR), stepMs: 1000 });
    await sweep().runOnce(NOW);
    const [job, ...none] = await queue.queue.getWaiting(); // together, at once
    expect(none).toEqual([]);
    expect(hintsOf(job.data).map((h) => h.id)).toEqual(ids);
  });

  it('works in batches and stops on the first short batch', async () => {
    await insertJobs(db.dataSource, { count: 250, start: NOW, stepMs: 1000 });
    const res = await sweep({}, 100).runOnce(NOW);
    expect(res).toEqual({ promoted: 250, batches: 3 });
    expect(await queuedCount(queue)).toBe(250);
    expect(await sweep({}, 100).runOnce(NOW)).toEqual({ promoted: 0, batches: 0 });
  });

  it('caps one run at maxPerRun and asks to be called again', async () => {
    await insertJobs(db.dataSource, { count: 30, start: NOW });
    expect(await sweep({}, 10, 20).runOnce(NOW)).toEqual({ promoted: 20, batches: 2, more: true });
    expect(await sweep({}, 10, 20).runOnce(NOW)).toEqual({ promoted: 10, batches: 2 }); // a full last batch costs one empty claim
  });

  it('crash after the commit, before the publish: rows are queued without a copy, where the overdue scan finds them', async () => {
    const ids = await insertJobs(db.dataSource, { count: 300, start: new Date(NOW.getTime() + HOUR), stepMs: 10 });
    const crash = sweep({
      afterClaim: () => {
        throw new SimulatedCrash('killed between COMMIT and addBulk');
      },
    });
    await expect(crash.runOnce(NOW)).rejects.toThrow(SimulatedCrash);
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 300 });
    expect(await queuedCount(queue)).toBe(0);
    // The overdue sweep's scan (queued rows past due + grace) returns every one of them.
    const seen: string[] = [];
    await repo.scanQueued(new Date(NOW.getTime() + 2 * HOUR), 1000, 1e6, async (rows) => void seen.push(...rows.map((r) => r.id)));
    expect(seen.sort()).toEqual([...ids].sort());
  });

  it('crash after the publish: nothing left to do, nothing doubled', async () => {
    const ids = await insertJobs(db.dataSource, { count: 50, start: new Date(NOW.getTime() + HOUR) });
    const crash = sweep({
      afterEnqueue: () => {
        throw new SimulatedCrash('killed after addBulk');
      },
    });
    await expect(crash.runOnce(NOW)).rejects.toThrow(SimulatedCrash);
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 50 });
    expect(await sweep().runOnce(NOW)).toMatchObject({ promoted: 0 });
    expect(await queuedCount(queue)).toBe(50);
  });

  it('holds no row lock or transaction while Redis answers: a cancel of a row being published does not wait', async () => {
    const ids = await insertJobs(db.dataSource, { count: 20, start: NOW });
    let entered!: () => void;
    let release!: () => void;
    const publishing = new Promise<void>((r) => (entered = r));
    const slowRedis = new Promise<void>((r) => (release = r));
    const slow = new PromotionSweep(
      repo,
      { enqueue: async () => { entered(); await slowRedis; } },
      { hotHorizonMs: 24 * HOUR, batchSize: 1000, maxPerRun: 1000, concurrency: 1 },
    );
    const run = slow.runOnce(NOW);
    await publishing;
    const [, cancelled] = await db.dataSource.transaction(async (m) => {
      await m.query(`SET LOCAL lock_timeout = '200ms'`);
      return m.query<[unknown, number]>(`UPDATE jobs SET state = 'c' WHERE id = $1 AND state = 'q'`, [ids[0]]);
    });
    expect(cancelled).toBe(1);
    release();
    expect(await run).toMatchObject({ promoted: 20 });
  });

  it('a failing Redis leaves every row scheduled for the next run', async () => {
    const ids = await insertJobs(db.dataSource, { count: 20, start: NOW });
    const broken = new PromotionSweep(
      repo,
      { enqueue: () => Promise.reject(new Error('READONLY You cannot write against a read only replica')) },
      { hotHorizonMs: 24 * HOUR, batchSize: 1000, maxPerRun: 1000, concurrency: 1 },
    );
    await expect(broken.runOnce(NOW)).rejects.toThrow('READONLY');
    expect(await statesOf(db.dataSource, ids)).toEqual({ s: 20 });
  });

  it('two replicas at once promote every row exactly once (SKIP LOCKED)', async () => {
    const ids = await insertJobs(db.dataSource, { count: 2000, start: NOW, stepMs: 5 });
    const [a, b] = await Promise.all([sweep({}, 100).runOnce(NOW), sweep({}, 100).runOnce(NOW)]);
    expect(a.promoted + b.promoted).toBe(2000);
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 2000 });
    expect(await queuedCount(queue)).toBe(2000);
  });

  it('parallel lanes in one run promote every row once, and a failing lane fails the run only after the others stop', async () => {
    const ids = await insertJobs(db.dataSource, { count: 1000, start: NOW, stepMs: 5 });
    expect(await sweep({}, 100, 1e6, 3).runOnce(NOW)).toMatchObject({ promoted: 1000 });
    expect(await statesOf(db.dataSource, ids)).toEqual({ q: 1000 });
    await db.dataSource.query(`UPDATE jobs SET state = 's'`);
    let calls = 0;
    const crashing = sweep({ afterEnqueue: () => { if (++calls === 2) throw new SimulatedCrash('lane crash'); } }, 100, 1e6, 3);
    await expect(crashing.runOnce(NOW)).rejects.toThrow(SimulatedCrash);
    const states = await statesOf(db.dataSource, ids);
    expect((states.q ?? 0) + (states.s ?? 0)).toBe(1000);
    // Lanes stop after their batch in flight: the batch done before the crash, the crashed one
    // (committed before its publish) and at most one more claim per other lane.
    expect(states.q ?? 0).toBeLessThanOrEqual(400);
  });

  it('counts almanac_promoted_total', async () => {
    const before = (await metrics.promoted.get()).values[0]?.value ?? 0;
    await insertJobs(db.dataSource, { count: 7, start: NOW });
    await sweep().runOnce(NOW);
    expect((await metrics.promoted.get()).values[0]?.value).toBe(before + 7);
  });

  describe('fair between tenants (issue 15 item 5)', () => {
    const A = 1;
    const B = 2;
    const C = 3;
    const hourStart = new Date('2026-11-29T10:00:00Z'); // NOW's hour: the promoter is catching up

    it("a quiet tenant's row goes out in the first batch though another tenant's 20,000 rows in its hour came first", async () => {
      await insertJobs(db.dataSource, { count: 20_000, start: hourStart, stepMs: 100, tenantId: A });
      const [quiet] = await insertJobs(db.dataSource, { count: 1, start: new Date(NOW.getTime() + 60_000), tenantId: B });
      const batches: string[][] = [];
      const run = await sweep({ afterEnqueue: (rows) => void batches.push(rows.map((r) => r.id)) }, 500, 500).runOnce(NOW);
      // In index (insertion) order, the old claim took 500 of A's rows and left B's for batch 41.
      expect(run).toEqual({ promoted: 500, batches: 1, more: true });
      expect(batches[0]).toContain(quiet);
      expect(await inQueue(queue, [quiet])).toBe(1);
    });

    it('an earlier hour still goes first: a row in a later hour waits, whatever its tenant', async () => {
      await insertJobs(db.dataSource, { count: 1000, start: hourStart, stepMs: 1000, tenantId: A });
      const later = await insertJobs(db.dataSource, { count: 1, start: new Date(hourStart.getTime() + HOUR), tenantId: B });
      expect(await sweep({}, 500, 500).runOnce(NOW)).toMatchObject({ promoted: 500 });
      expect(await statesOf(db.dataSource, later)).toEqual({ s: 1 });
    });

    it("fills what a tenant's share leaves in hour order: batches stay full and the run ends on the first short one", async () => {
      const a = await insertJobs(db.dataSource, { count: 1000, start: hourStart, stepMs: 1000, tenantId: A });
      const b = await insertJobs(db.dataSource, { count: 3, start: hourStart, tenantId: B });
      const c = await insertJobs(db.dataSource, { count: 10, start: new Date(hourStart.getTime() + HOUR), tenantId: C });
      expect(await sweep({}, 500).runOnce(NOW)).toEqual({ promoted: 1013, batches: 3 });
      expect(await statesOf(db.dataSource, [...a, ...b, ...c])).toEqual({ q: 1013 });
    });

    it('a tenant left out of the share (its rows fell due during the run) is still promoted by the fill', async () => {
      await insertJobs(db.dataSource, { count: 100, start: hourStart, tenantId: A });
      const b = await insertJobs(db.dataSource, { count: 5, start: hourStart, tenantId: B });
      const rows = await repo.promoteColdBatch(new Date(NOW.getTime() + 24 * HOUR), 1000, [A]);
      expect(rows).toHaveLength(105);
      expect(await statesOf(db.dataSource, b)).toEqual({ q: 5 });
    });

    it('lists the tenants with due cold rows, and none when nothing is due', async () => {
      await insertJobs(db.dataSource, { count: 3, start: hourStart, tenantId: C });
      await insertJobs(db.dataSource, { count: 3, start: new Date(hourStart.getTime() + 3 * HOUR), tenantId: A });
      await insertJobs(db.dataSource, { count: 3, start: new Date(hourStart.getTime() + 48 * HOUR), tenantId: B });
      expect(await repo.dueColdTenants(new Date(NOW.getTime() + 24 * HOUR))).toEqual([A, C]);
      expect(await repo.dueColdTenants(new Date(hourStart.getTime() - 1))).toEqual([]);
    });

    it('two replicas with three lanes each promote every row of every tenant exactly once', async () => {
      const ids = [
        ...(await insertJobs(db.dataSource, { count: 2000, start: hourStart, stepMs: 5, tenantId: A })),
        ...(await insertJobs(db.dataSource, { count: 300, start: hourStart, stepMs: 5, tenantId: B })),
        ...(await insertJobs(db.dataSource, { count: 200, start: new Date(hourStart.getTime() + HOUR), tenantId: C })),
      ];
      const [x, y] = await Promise.all([sweep({}, 100, 1e6, 3).runOnce(NOW), sweep({}, 100, 1e6, 3).runOnce(NOW)]);
      expect(x.promoted + y.promoted).toBe(2500);
      expect(await statesOf(db.dataSource, ids)).toEqual({ q: 2500 });
      expect(await queuedCount(queue)).toBe(2500);
    });

    it("looks tenants up through jobs_cold_tenant even when the heap is in hour order (the planner's trap)", async () => {
      // One big hour inserted as a block, then later hours in order: hour correlation 1, where
      // the default costs read the whole bucket through jobs_cold_due for each tenant.
      await db.dataSource.query(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
         SELECT 1, 'big-' || g, 'noop', $1::timestamptz + (g % 3600) * interval '1 second', 's' FROM generate_series(1, 100000) g`,
        [hourStart],
      );
      await insertJobs(db.dataSource, { count: 5, start: hourStart, stepMs: 600_000, tenantId: B });
      await db.dataSource.query(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
         SELECT 1 + g % 2, 'later-' || g, 'noop', $1::timestamptz + interval '1 hour' + g * interval '30 seconds', 's' FROM generate_series(1, 100000) g`,
        [hourStart],
      );
      await db.dataSource.query('ANALYZE jobs');
      const plan = await repo.explainFairClaim(new Date(NOW.getTime() + 24 * HOUR), 5000, [A, B]);
      expect(plan.match(/Index Scan using jobs_cold_tenant/g)).toHaveLength(2); // is the tenant in h0, then its share
      expect(plan.match(/jobs_cold_due/g)).toHaveLength(1); // the earliest due hour only
      expect(plan).not.toMatch(/Bitmap|Seq Scan/);
    });
  });

  it('with nothing due, the fair share costs one probe of jobs_cold_due, not a scan (the idle overdue sweep)', async () => {
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1 + g % 1000, 'far-' || g, 'noop', $1::timestamptz + interval '2 days' + (g % 365) * interval '1 day', 's'
         FROM generate_series(1, 200000) g`,
      [NOW],
    );
    await db.dataSource.query('ANALYZE jobs');
    const rows = await db.dataSource.query<{ 'QUERY PLAN': string }[]>(`EXPLAIN ${DUE_COLD_TENANTS_SQL}`, [new Date(NOW.getTime() + 30_000)]);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).not.toMatch(/Seq Scan/);
    expect(await repo.dueColdTenants(new Date(NOW.getTime() + 30_000))).toEqual([]);
  });

  it('scans jobs_cold_due by index range: cost follows the promoted rows, not the table', async () => {
    // 200k cold rows spread over a year, 500 due in the next hours.
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1, 'big-' || g, 'noop', $1::timestamptz + interval '2 days' + (g % 365) * interval '1 day', 's'
         FROM generate_series(1, 200000) g`,
      [NOW],
    );
    await insertJobs(db.dataSource, { count: 500, start: NOW, stepMs: 1000 });
    await db.dataSource.query('ANALYZE jobs');
    const plan = await repo.explainColdClaim(new Date(NOW.getTime() + 24 * HOUR), 5000);
    expect(plan).toMatch(/Index Scan using jobs_cold_due/);
    expect(plan).not.toMatch(/Seq Scan/);
    expect(await sweep().runOnce(NOW)).toMatchObject({ promoted: 500 });
  });
});
