import { ReadyQueues } from '@almanac/delivery';
import { KindCatalog, KindRoutes } from '@almanac/kinds';
import { KindsRepository, SweepsRepository } from '@almanac/persistence';
import { HotQueue, MetricsService } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { insertJobs, inQueue, queuedRowIds } from '@almanac/testing/promoter-rows';
import { startPrivateRedis, type PrivateRedis } from '@almanac/testing/private-redis';
import { pushHints } from '@almanac/testing/ready-hints';
import { PromotionSweep } from '../sweeps/promotion.sweep';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { LostHints } from './lost-hints';
import { OverdueSweep } from './overdue.sweep';
import { RedisEpoch } from './redis-epoch';

const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:20:00Z');
const GRACE = 30_000;

/** A restart or failover that kept Redis' data: what lost its hint is re-hinted, what kept it is not copied. */
describe('OverdueSweep after a Redis restart (Postgres + a private redis-server)', () => {
  let db: TestDatabase;
  let priv: PrivateRedis;
  let repo: SweepsRepository;

  function build(prefix: string, batchSize: number, maxPerRun = 100_000) {
    const queue = HotQueue.open(priv.connection, prefix);
    const metrics = new SweepMetrics(new MetricsService());
    const promotion = new PromotionSweep(repo, queue, { hotHorizonMs: 24 * HOUR, batchSize, maxPerRun: 1e6, concurrency: 2 }, metrics);
    const epoch = new RedisEpoch(priv.connection, prefix);
    const ready = new ReadyQueues(priv.connection, prefix);
    const lost = new LostHints(new KindRoutes(new Map()), new KindCatalog(new KindsRepository(db.dataSource), { maxAgeMs: 0, missRefreshMs: 0 }), ready);
    const sweep = new OverdueSweep(repo, queue, lost, epoch, promotion, { graceMs: GRACE, lookaheadMs: 30_000, batchSize, maxPerRun }, metrics);
    return { queue, sweep, epoch, ready };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    priv = await startPrivateRedis();
    repo = new SweepsRepository(db.dataSource);
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, job_attempts'));
  afterAll(async () => {
    await priv.stop();
    await db.drop();
  });

  it('a restart recovery larger than a run judges rows by their hints in every run, not only the first (no copy of what survived)', async () => {
    const { queue, sweep, epoch } = build('restart-long', 10, 25);
    await sweep.runOnce(NOW);
    await insertJobs(db.dataSource, { count: 40, state: 'q', start: new Date(NOW.getTime() - 20_000), stepMs: 100 });
    await priv.connection.hset(epoch.key, 'run_id', 'some-previous-server');
    const checked = jest.spyOn(LostHints.prototype, 'of');
    expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'restarted', more: true });
    const firstRun = checked.mock.calls.length;
    expect(firstRun).toBeGreaterThan(0);
    expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'restarted', more: false }); // the marker says recovering, of a restart
    expect(checked.mock.calls.length).toBeGreaterThan(firstRun);
    checked.mockRestore();
    await queue.close();
  });

  it('a second restart during a restart recovery starts it again as a restart, not as a loss: rows waiting in their pool keep their one hint', async () => {
    const { queue, sweep, epoch, ready } = build('restart-twice', 1000);
    const waiting = await insertJobs(db.dataSource, { count: 5, state: 'q', start: new Date(NOW.getTime() - 10_000), stepMs: 1000 });
    await pushHints(ready, 'default', waiting.map((id, i) => ({ id, tenantId: 1, kind: 'noop', dueMs: NOW.getTime() - 10_000 + i * 1000 })));
    const unhinted = await insertJobs(db.dataSource, { count: 3, state: 'q', tenantId: 2, start: new Date(NOW.getTime() - 5000) });
    // The first restart's recovery, cut short; then the server restarted again (data kept: the marker is there).
    await priv.connection.hset(epoch.key, { epoch: 'first-recovery', recovering: '1', found: 'restarted', run_id: 'old', after: `${NOW.getTime() - 20_000}:1` });
    expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'restarted', more: false, requeued: { redis_lost: 3 } });
    expect(await inQueue(queue, waiting)).toBe(0);
    expect(await inQueue(queue, unhinted)).toBe(3);
    expect((await sweep.runOnce(NOW)).redis).toBe('ok');
    await queue.close();
  });

  it('a restart during the recovery of a loss begins it again as a loss: every row, hinted or not', async () => {
    const { queue, sweep, epoch, ready } = build('lost-then-restart', 1000);
    const rows = await insertJobs(db.dataSource, { count: 5, state: 'q', start: new Date(NOW.getTime() + HOUR), stepMs: 1000 });
    await pushHints(ready, 'default', rows.slice(0, 2).map((id, i) => ({ id, tenantId: 1, kind: 'noop', dueMs: NOW.getTime() + HOUR + i * 1000 })));
    await priv.connection.hset(epoch.key, { epoch: 'first-recovery', recovering: '1', found: 'lost', run_id: 'old' });
    expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'lost', requeued: { redis_lost: 5 } });
    await queue.close();
  });

  it('a Redis restart that kept its data copies no hint that survived in the hot queue (rows due later than a hand-off)', async () => {
    const { queue, sweep, epoch } = build('restart-kept', 1000);
    await sweep.runOnce(NOW);
    const rows = await insertJobs(db.dataSource, { count: 10, state: 'q', start: new Date(NOW.getTime() + HOUR), stepMs: 1000 });
    await queue.enqueue(rows.map((id, i) => ({ id, dueMs: NOW.getTime() + HOUR + i * 1000, tenantId: 1, kind: 'noop' })), NOW);
    await priv.connection.hset(epoch.key, 'run_id', 'some-previous-server');
    expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'restarted', requeued: { redis_lost: 0 } });
    expect((await queuedRowIds(queue)).sort()).toEqual([...rows].sort()); // each once
    await queue.close();
  });

  it('a Redis restart (new run_id, data kept) re-hints the rows due that lost theirs with the last writes; later ones once past their grace', async () => {
    const { queue, sweep, epoch } = build('restart', 1000);
    await sweep.runOnce(NOW);
    await priv.connection.hset(epoch.key, 'run_id', 'some-previous-server');
    const due = await insertJobs(db.dataSource, { count: 10, state: 'q', start: new Date(NOW.getTime() - 5000) });
    const later = await insertJobs(db.dataSource, { count: 10, state: 'q', start: new Date(NOW.getTime() + HOUR) });
    expect(await sweep.runOnce(NOW)).toMatchObject({ redis: 'restarted', requeued: { redis_lost: 10 } });
    expect(await inQueue(queue, due)).toBe(10);
    expect(await inQueue(queue, later)).toBe(0); // their hints, had they survived, would be in the hot queue
    expect((await sweep.runOnce(NOW)).redis).toBe('ok');
    await sweep.runOnce(new Date(NOW.getTime() + HOUR + GRACE + 1)); // the overdue pass
    expect(await inQueue(queue, later)).toBe(10);
    await queue.close();
  });
});
