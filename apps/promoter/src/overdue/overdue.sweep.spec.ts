import { SweepsRepository } from '@almanac/persistence';
import pino, { type Logger } from 'pino';
import { DELIVERY_LEAD_MS, type HotItem, HotQueue, MetricsService, queueJobId } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { PromotionSweep } from '../sweeps/promotion.sweep';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { insertJobs, inQueue, queuedCount, statesOf } from '../testing/fixtures';
import { startPrivateRedis, type PrivateRedis } from '../testing/private-redis';
import { LEASE_EXPIRED_ERROR, OverdueSweep } from './overdue.sweep';
import { RedisEpoch } from './redis-epoch';

const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:20:00Z');
const GRACE = 30_000;

describe('OverdueSweep (Postgres + Redis)', () => {
  let db: TestDatabase;
  let shared: TestRedis;
  let repo: SweepsRepository;
  let metrics: SweepMetrics;

  function build(connection: TestRedis['connection'], prefix: string, batchSize = 1000, log?: Logger) {
    const queue = HotQueue.open(connection, prefix);
    const promotion = new PromotionSweep(repo, queue, { hotHorizonMs: 24 * HOUR, batchSize, maxPerRun: 1e6, concurrency: 2 }, metrics);
    const epoch = new RedisEpoch(connection, prefix);
    const sweep = new OverdueSweep(
      repo,
      queue,
      epoch,
      promotion,
      { graceMs: GRACE, lookaheadMs: 30_000, batchSize, maxPerRun: 100_000 },
      metrics,
      log,
    );
    return { queue, sweep, epoch };
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
      expect(res).toMatchObject({ redis: 'ok', requeued: { overdue: 5, lease_expired: 0, redis_lost: 0, scheduled_due: 0 } });
      expect(await inQueue(queue, late)).toBe(5);
      expect(await inQueue(queue, recent)).toBe(0);
      expect(await statesOf(db.dataSource, late)).toEqual({ q: 5 });
      // Same jobId again: still one copy each.
      await sweep.runOnce(NOW);
      expect(await queuedCount(queue)).toBe(5);
    });

    it('a backlog larger than one run is walked on across runs, not restarted from the oldest; parked rows are left alone', async () => {
      const small = build(shared.connection, `${shared.prefix}-small-${Math.random().toString(36).slice(2, 8)}`, 4);
      (small.sweep as unknown as { opts: { maxPerRun: number } }).opts.maxPerRun = 10;
      await small.sweep.runOnce(NOW); // writes its epoch marker
      const late = await insertJobs(db.dataSource, { count: 25, state: 'q', start: new Date(NOW.getTime() - HOUR), stepMs: 1000 });
      const parked = await insertJobs(db.dataSource, { count: 3, state: 'q', start: new Date(NOW.getTime() - 2 * HOUR) });
      await db.dataSource.query(`INSERT INTO dispatch_backlog (job_id, run_at, pool) SELECT unnest($1::bigint[]), now(), 'default'`, [parked]);
      const runs = [];
      for (let i = 0; i < 3; i++) {
        const r = await small.sweep.runOnce(NOW);
        runs.push([r.requeued.overdue, r.more]);
      }
      expect(runs).toEqual([[10, true], [10, true], [5, false]]);
      expect(await inQueue(small.queue, late)).toBe(25); // every one reached, the tail too
      expect(await inQueue(small.queue, parked)).toBe(0);
      await small.queue.close();
    });

    it('an overdue row whose queue copy waits delayed for a later time (rescheduled earlier while Redis was down) runs now', async () => {
      const [id] = await insertJobs(db.dataSource, { count: 1, state: 'q', start: new Date(NOW.getTime() - GRACE - 1) });
      // The copy from before the reschedule: due tomorrow. Re-adding j-<id> is a no-op while it exists.
      await queue.enqueue([{ id, runAt: new Date(NOW.getTime() + 24 * HOUR), tenantId: 1, kind: 'noop' }], NOW);
      const res = await sweep.runOnce(NOW);
      expect(res).toMatchObject({ requeued: { overdue: 1 } });
      expect(await (await queue.queue.getJob(queueJobId(id)))!.getState()).toBe('waiting');
    });

    it('moves running rows with an expired lease back to queued and re-enqueues them', async () => {
      const expired = await insertJobs(db.dataSource, {
        count: 3, state: 'r', start: new Date(NOW.getTime() - HOUR), leaseUntil: new Date(NOW.getTime() - 1), attempts: 1,
      });
      const live = await insertJobs(db.dataSource, {
        count: 2, state: 'r', start: new Date(NOW.getTime() - HOUR), leaseUntil: new Date(NOW.getTime() + 1000), attempts: 1,
      });
      const res = await sweep.runOnce(NOW);
      expect(res.requeued.lease_expired).toBe(3);
      expect(await statesOf(db.dataSource, expired)).toEqual({ q: 3 });
      expect(await statesOf(db.dataSource, live)).toEqual({ r: 2 });
      expect(await inQueue(queue, expired)).toBe(3);
      const [row] = await db.dataSource.query(`SELECT attempts, lease_until FROM jobs WHERE id = $1`, [expired[0]]);
      expect(row).toEqual({ attempts: 1, lease_until: null }); // the dispatcher counted the attempt; not again
      const job = await queue.queue.getJob(queueJobId(expired[0]));
      expect(job?.opts.delay).toBe(0);
    });

    it('a lease that expired on the last attempt makes the job dead, with a lost attempt row', async () => {
      const [id] = await insertJobs(db.dataSource, {
        count: 1, state: 'r', start: new Date(NOW.getTime() - HOUR), leaseUntil: new Date(NOW.getTime() - 1), attempts: 3, maxAttempts: 3,
      });
      const res = await sweep.runOnce(NOW);
      expect(res).toMatchObject({ dead: 1, requeued: { lease_expired: 0 } });
      expect(await statesOf(db.dataSource, [id])).toEqual({ x: 1 });
      const attempts = await db.dataSource.query(`SELECT attempt, outcome, error FROM job_attempts WHERE job_id = $1`, [id]);
      expect(attempts).toEqual([{ attempt: 3, outcome: 'lost', error: LEASE_EXPIRED_ERROR }]);
      expect(await inQueue(queue, [id])).toBe(0);
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
      const inner = await repo.withSweepLease('overdue', 'another replica', () => sweep.runOnce(NOW));
      expect(inner).toMatchObject({ skipped: true, redis: 'unchecked' });
    });

    it('with nothing to do, touches nothing', async () => {
      await insertJobs(db.dataSource, { count: 100, start: new Date(NOW.getTime() + 48 * HOUR) });
      const res = await sweep.runOnce(NOW);
      expect(res).toEqual({
        redis: 'ok', dead: 0, more: false, requeued: { overdue: 0, lease_expired: 0, redis_lost: 0, scheduled_due: 0 },
      });
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
      const soon = await insertJobs(db.dataSource, { count: 5000, state: 'q', start: new Date(NOW.getTime() + 1000), stepMs: 7 });
      const past = await insertJobs(db.dataSource, { count: 5000, state: 'q', start: new Date(NOW.getTime() - 10_000), stepMs: 1 });
      const rows = await db.dataSource.query<HotItem[]>(
        `SELECT id::text AS id, run_at AS "runAt", tenant_id AS "tenantId", kind FROM jobs`,
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
      const first = await queue.queue.getJob(queueJobId(soon[0]));
      expect(first?.opts.delay).toBe(1000 - DELIVERY_LEAD_MS);
      expect((await sweep.runOnce(NOW)).redis).toBe('ok');
      await queue.close();
    });

    it('a Redis restart (new run_id, data kept) re-enqueues too: the last writes may be gone', async () => {
      const { queue, sweep, epoch } = build(priv.connection, 'restart', 1000);
      await sweep.runOnce(NOW);
      await priv.connection.hset(epoch.key, 'run_id', 'some-previous-server');
      await insertJobs(db.dataSource, { count: 10, state: 'q', start: new Date(NOW.getTime() + HOUR) });
      const res = await sweep.runOnce(NOW);
      expect(res.redis).toBe('restarted');
      expect(res.requeued.redis_lost).toBeGreaterThanOrEqual(10);
      expect((await sweep.runOnce(NOW)).redis).toBe('ok');
      await queue.close();
    });
  });
});
