import { ReadyQueues } from '@almanac/delivery';
import { KindCatalog, KindRoutes } from '@almanac/kinds';
import { LostHints } from './lost-hints';
import type { Hint } from '@almanac/domain';
import { KindsRepository, SweepsRepository } from '@almanac/persistence';
import pino, { type Logger } from 'pino';
import { DELIVERY_LEAD_MS, HotQueue, MetricsService } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { PromotionSweep } from '../sweeps/promotion.sweep';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { envelopeOf, insertJobs, inQueue, queuedCount, statesOf } from '@almanac/testing/promoter-rows';
import { EpochWatch } from './epoch-watch';
import { startPrivateRedis, type PrivateRedis } from '@almanac/testing/private-redis';
import { OverdueSweep } from './overdue.sweep';
import { RedisEpoch } from './redis-epoch';
import { pushHints } from '@almanac/testing/ready-hints';

const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:20:00Z');
const GRACE = 30_000;

describe('OverdueSweep (Postgres + Redis)', () => {
  let db: TestDatabase;
  let shared: TestRedis;
  let repo: SweepsRepository;
  let metrics: SweepMetrics;

  function build(connection: TestRedis['connection'], prefix: string, batchSize = 1000, log?: Logger, maxPerRun = 100_000) {
    const queue = HotQueue.open(connection, prefix);
    const promotion = new PromotionSweep(repo, queue, { hotHorizonMs: 24 * HOUR, batchSize, maxPerRun: 1e6, concurrency: 2 }, metrics);
    const epoch = new RedisEpoch(connection, prefix);
    const ready = new ReadyQueues(connection, prefix);
    const lost = new LostHints(new KindRoutes(new Map()), new KindCatalog(new KindsRepository(db.dataSource), { maxAgeMs: 0, missRefreshMs: 0 }), ready);
    const sweep = new OverdueSweep(
      repo,
      queue,
      lost,
      epoch,
      promotion,
      { graceMs: GRACE, lookaheadMs: 30_000, batchSize, maxPerRun },
      metrics,
      log,
    );
    return { queue, sweep, epoch, ready };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    shared = await createTestRedis();
    repo = new SweepsRepository(db.dataSource);
    metrics = new SweepMetrics(new MetricsService());
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, job_attempts'));
  afterAll(async () => {
    await shared.cleanup();
    await db.drop();
  });

  it("the epoch watch runs the recovery as soon as Redis has lost its data, and nothing while it has not", async () => {
    const prefix = `${shared.prefix}-watch`;
    const { queue, sweep, epoch } = build(shared.connection, prefix);
    try {
      const rows = await insertJobs(db.dataSource, { count: 5, state: 'q', start: new Date(NOW.getTime() + 60_000), stepMs: 1000 });
      const watch = new EpochWatch(epoch, sweep);
      expect(await watch.runOnce(NOW)).toEqual({ more: false, skipped: undefined }); // no marker yet: a first recovery writes it
      await queue.queue.obliterate({ force: true });
      const later = new Date(NOW.getTime() + 10_000);
      expect(await watch.runOnce(later)).toEqual({ more: false }); // the marker is there: only the promotion pass, which finds nothing
      expect(await inQueue(queue, rows)).toBe(0);
      await shared.connection.del(epoch.key); // Redis emptied (a restart without persistence)
      await watch.runOnce(later);
      expect(await inQueue(queue, rows)).toBe(5);
    } finally {
      await queue.close();
    }
  });

  it('after a recovery, the epoch watch queues the rows the API left scheduled while Redis was away', async () => {
    const prefix = `${shared.prefix}-after`;
    const { queue, sweep, epoch } = build(shared.connection, prefix);
    try {
      const watch = new EpochWatch(epoch, sweep);
      await watch.runOnce(NOW); // Redis new: the recovery runs
      // Created while the API's enqueues still failed, after the recovery: left scheduled, due in 2 s.
      const [soon] = await insertJobs(db.dataSource, { count: 1, state: 's', start: new Date(NOW.getTime() + 3000) });
      await watch.runOnce(new Date(NOW.getTime() + 1000));
      expect(await inQueue(queue, [soon])).toBe(1); // was left to the overdue sweep's next run (30 s)
    } finally {
      await queue.close();
    }
  });

  it("after a recovery the overdue sweep's own timer ran, the epoch watch still queues the rows left scheduled meanwhile", async () => {
    const { queue, sweep, epoch } = build(shared.connection, `${shared.prefix}-timer`);
    try {
      const watch = new EpochWatch(epoch, sweep);
      await sweep.runOnce(NOW); // Redis new, seen first by the sweep's own run: the watch then finds the marker
      const [soon] = await insertJobs(db.dataSource, { count: 1, state: 's', start: new Date(NOW.getTime() + 3000) });
      await watch.runOnce(new Date(NOW.getTime() + 1000));
      expect(await inQueue(queue, [soon])).toBe(1);
    } finally {
      await queue.close();
    }
  });

  it("the epoch watch's follow-up does not hint again the rows the recovery just hinted, still in the hot queue", async () => {
    const { queue, sweep, epoch } = build(shared.connection, `${shared.prefix}-dup`);
    try {
      const watch = new EpochWatch(epoch, sweep);
      const rows = await insertJobs(db.dataSource, { count: 5, state: 'q', start: new Date(NOW.getTime() - 120_000), stepMs: 1000 }); // past the grace
      await insertJobs(db.dataSource, { count: 3, state: 'q', start: new Date(NOW.getTime() - 10_000), stepMs: 1000 }); // within it: another envelope than the 5 alone
      await watch.runOnce(NOW); // Redis new: the recovery hints all 8
      const held = async () => (await queue.held()).filter((h) => rows.includes(h.hint.id)).length;
      expect(await held()).toBe(5);
      await watch.runOnce(new Date(NOW.getTime() + 1000)); // before any dispatcher handed them on
      expect(await held()).toBe(5); // the whole overdue run each tick hinted them again: 10
    } finally {
      await queue.close();
    }
  });

  describe('on the shared Redis (own prefix)', () => {
    let queue: HotQueue;
    let sweep: OverdueSweep;

    beforeEach(async () => {
      ({ queue, sweep } = build(shared.connection, `${shared.prefix}-${Math.random().toString(36).slice(2, 8)}`));
      await sweep.runOnce(NOW); // first sight of this Redis: writes the epoch marker
    });
    afterEach(async () => queue.close());

    it('warns that Redis lost its data only when queued jobs had to be put back (a brand-new install stays quiet)', async () => {
      const lines: { level: number; msg: string }[] = [];
      const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) });
      const quiet = build(shared.connection, `${shared.prefix}-new-${Math.random().toString(36).slice(2, 8)}`, 1000, log);
      expect((await quiet.sweep.runOnce(NOW)).redis).toBe('lost');
      expect(lines.filter((l) => l.level >= 40)).toEqual([]);
      expect(lines.map((l) => l.msg)).toEqual(['Redis lost its data (or is new): no job was queued, marker written']);
      await quiet.queue.close();

      await insertJobs(db.dataSource, { count: 3, state: 'q', start: new Date(NOW.getTime() + HOUR) });
      const flushed = build(shared.connection, `${shared.prefix}-lost-${Math.random().toString(36).slice(2, 8)}`, 1000, log);
      await flushed.sweep.runOnce(NOW);
      expect(lines.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual(['Redis lost its data (or is new): re-enqueued 3 queued jobs']);
      await flushed.queue.close();
    });

    it('first run on a Redis without a marker treats it as lost; the next sees it ok', async () => {
      const fresh = build(shared.connection, `${shared.prefix}-fresh`);
      expect((await fresh.sweep.runOnce(NOW)).redis).toBe('lost');
      expect((await fresh.sweep.runOnce(NOW)).redis).toBe('ok');
      await fresh.queue.close();
    });

    it('re-enqueues queued rows past due + grace, leaves those within grace alone', async () => {
      const late = await insertJobs(db.dataSource, { count: 5, state: 'q', start: new Date(NOW.getTime() - GRACE - 1) });
      const recent = await insertJobs(db.dataSource, { count: 5, state: 'q', start: new Date(NOW.getTime() - GRACE + 1) });
      const res = await sweep.runOnce(NOW);
      expect(res).toMatchObject({ redis: 'ok', requeued: { overdue: 5, worker_lost: 0, redis_lost: 0, scheduled_due: 0 } });
      expect(await inQueue(queue, late)).toBe(5);
      expect(await inQueue(queue, recent)).toBe(0);
      expect(await statesOf(db.dataSource, late)).toEqual({ q: 5 });
      // The same repair again: the same envelope, still one hint each.
      await sweep.runOnce(NOW);
      expect(await queuedCount(queue)).toBe(5);
    });

    it('a backlog larger than one run is walked on across runs, not restarted from the oldest; rows waiting in their pool are left alone', async () => {
      const small = build(shared.connection, `${shared.prefix}-small-${Math.random().toString(36).slice(2, 8)}`, 4);
      (small.sweep as unknown as { opts: { maxPerRun: number } }).opts.maxPerRun = 10;
      await small.sweep.runOnce(NOW); // writes its epoch marker
      const late = await insertJobs(db.dataSource, { count: 25, state: 'q', start: new Date(NOW.getTime() - HOUR), stepMs: 1000 });
      // Another tenant's backlog, waiting in its pool for a worker (hinted, not lost).
      const waiting = await insertJobs(db.dataSource, { count: 3, state: 'q', tenantId: 2, start: new Date(NOW.getTime() - 2 * HOUR), stepMs: 1 });
      await pushHints(small.ready, 'default', waiting.map((id, i) => ({ id, tenantId: 2, kind: 'noop', dueMs: NOW.getTime() - 2 * HOUR + i })));
      const runs = [];
      for (let i = 0; i < 3; i++) {
        const r = await small.sweep.runOnce(NOW);
        runs.push([r.requeued.overdue, r.more]);
      }
      // Each run scans 10 rows (the waiting ones too) and re-hints the lost among them.
      expect(runs).toEqual([[7, true], [10, true], [8, false]]);
      expect(await inQueue(small.queue, late)).toBe(25); // every one reached, the tail too
      expect(await inQueue(small.queue, waiting)).toBe(0);
      await small.queue.close();
    });

    it('an overdue row whose stale hint waits delayed for a later time (rescheduled earlier while Redis was down) gets one for now', async () => {
      const [id] = await insertJobs(db.dataSource, { count: 1, state: 'q', start: new Date(NOW.getTime() - GRACE - 1) });
      // The hint from before the reschedule: due tomorrow.
      await queue.enqueue([{ id, dueMs: NOW.getTime() + 24 * HOUR, tenantId: 1, kind: 'noop' }], NOW);
      const res = await sweep.runOnce(NOW);
      expect(res).toMatchObject({ requeued: { overdue: 1 } });
      expect((await queue.queue.getWaiting()).length).toBe(1);
    });

    it('promotes scheduled rows already due or due within the current hour; later hours wait for promotion', async () => {
      const overdue = await insertJobs(db.dataSource, { count: 4, start: new Date(NOW.getTime() - 5 * 60e3) });
      const soon = await insertJobs(db.dataSource, { count: 4, start: new Date('2026-11-29T10:59:59.999Z') });
      const later = await insertJobs(db.dataSource, { count: 4, start: new Date('2026-11-29T11:00:00.000Z') });
      const res = await sweep.runOnce(NOW);
      expect(res.requeued.scheduled_due).toBe(8);
      expect(await statesOf(db.dataSource, [...overdue, ...soon])).toEqual({ q: 8 });
      expect(await statesOf(db.dataSource, later)).toEqual({ s: 4 });
    });

    it('runs on one replica at a time (sweep lease): the other reports skipped', async () => {
      const inner = await new SweepsRepository(db.dataSource, 'another replica').withSweepLease('overdue', () => sweep.runOnce(NOW));
      expect(inner).toMatchObject({ skipped: true, redis: 'unchecked' });
    });

    it('with nothing to do, touches nothing', async () => {
      await insertJobs(db.dataSource, { count: 100, start: new Date(NOW.getTime() + 48 * HOUR) });
      const res = await sweep.runOnce(NOW);
      expect(res).toEqual({ redis: 'ok', more: false, requeued: { overdue: 0, worker_lost: 0, redis_lost: 0, scheduled_due: 0 } });
    });
  });

  describe('Redis losing everything (private redis-server)', () => {
    let priv: PrivateRedis;
    beforeAll(async () => {
      priv = await startPrivateRedis();
    });
    afterAll(async () => priv.stop());

    it('after FLUSHALL with 10,000 hot jobs in flight, one run puts every one back with its own delay', async () => {
      const { queue, sweep } = build(priv.connection, 'almanac', 5000);
      expect((await sweep.runOnce(NOW)).redis).toBe('lost'); // fresh server: no marker yet
      const soon = await insertJobs(db.dataSource, { count: 5000, state: 'q', start: new Date(NOW.getTime() + 10_000), stepMs: 7 });
      const past = await insertJobs(db.dataSource, { count: 5000, state: 'q', start: new Date(NOW.getTime() - 10_000), stepMs: 1 });
      const rows = await db.dataSource.query<Hint[]>(
        `SELECT id::text AS id, (extract(epoch FROM run_at) * 1000)::float8 AS "dueMs", tenant_id AS "tenantId", kind FROM jobs`,
      );
      await queue.enqueue(rows, NOW);
      expect(await queuedCount(queue)).toBe(10_000);
      expect((await sweep.runOnce(NOW)).redis).toBe('ok');

      await priv.connection.flushall();
      expect(await queuedCount(queue)).toBe(0);

      const res = await sweep.runOnce(NOW);
      expect(res).toMatchObject({ redis: 'lost', requeued: { redis_lost: 10_000, overdue: 0 } });
      expect(await queuedCount(queue)).toBe(10_000);
      expect(await inQueue(queue, [...soon.slice(0, 50), ...past.slice(-50)])).toBe(100);
      const first = await envelopeOf(queue, soon[0]);
      expect(first?.job.opts.delay).toBeLessThanOrEqual(10_000 - DELIVERY_LEAD_MS); // less what the run took before its add
      expect(first?.job.opts.delay).toBeGreaterThan(10_000 - DELIVERY_LEAD_MS - 5000);
      expect((await sweep.runOnce(NOW)).redis).toBe('ok');
      await queue.close();
    });

    it('after a loss, re-hints every queued row even where its pool already holds an older one (the recovery\'s own hand-off)', async () => {
      const { queue, sweep, ready } = build(priv.connection, 'handed', 10);
      const rows = await insertJobs(db.dataSource, { count: 30, state: 'q', start: new Date(NOW.getTime() - 10_000), stepMs: 1000 });
      // The first rows, due already, were handed over to the pool while the scan went on.
      await pushHints(ready, 'default', rows.slice(0, 3).map((id, i) => ({ id, tenantId: 1, kind: 'noop', dueMs: NOW.getTime() - 10_000 + i * 1000 })));
      const res = await sweep.runOnce(NOW); // no marker: Redis lost its data
      expect(res).toMatchObject({ redis: 'lost', requeued: { redis_lost: 30 } });
      expect(await inQueue(queue, rows.slice(-10))).toBe(10);
      await queue.close();
    });

    it('a recovery larger than a run goes on where the last run stopped, in another replica too, until it ends', async () => {
      const { queue, sweep, epoch } = build(priv.connection, 'resumed', 10, undefined, 25);
      await sweep.runOnce(NOW); // the marker written: nothing was queued
      const rows = await insertJobs(db.dataSource, { count: 60, state: 'q', start: new Date(NOW.getTime() + 1000), stepMs: 1000 });
      await priv.connection.del(epoch.key); // Redis lost its data
      expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'lost', more: true, requeued: { redis_lost: 25 } });
      // A promoter restarted, or another replica: from where the first stopped, not from the start (which never ended past a run's size).
      const other = build(priv.connection, 'resumed', 10, undefined, 25);
      expect(await other.sweep.runOnce(NOW)).toMatchObject({ redis: 'lost', more: true, requeued: { redis_lost: 25 } });
      expect(await other.sweep.runOnce(NOW)).toMatchObject({ redis: 'lost', more: false, requeued: { redis_lost: 10 } });
      expect(await inQueue(queue, rows)).toBe(60);
      expect((await sweep.runOnce(NOW)).redis).toBe('ok');
      await Promise.all([queue.close(), other.queue.close()]);
    });
  });
});
