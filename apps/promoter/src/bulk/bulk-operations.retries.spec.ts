import type { BulkFilter } from '@almanac/domain';
import { type BulkOperationRecord, BulkOperationsRepository, createDataSource } from '@almanac/persistence';
import { HotQueue, MetricsService } from '@almanac/platform';
import { ageLastFailure, installChunkPoison } from '@almanac/testing/bulk-operations';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { insertJobs, statesOf } from '@almanac/testing/promoter-rows';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import type { DataSource } from 'typeorm';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { BulkOperationsSweep } from './bulk-operations.sweep';

const HOUR = 3600e3;
const NOW = new Date('2026-12-02T10:00:00Z');
const at = (ms: number) => new Date(NOW.getTime() + ms);

/** Failures, back-off and cancels of bulk operations whose steps meet timeouts and locks. */
describe('BulkOperationsSweep: failures and cancels (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;
  let repo: BulkOperationsRepository;
  /** Waits at most 100 ms for a lock, as the API's cancel waits at most ALMANAC_PG_LOCK_TIMEOUT_MS. */
  let impatient: DataSource;
  /** Gives up on a statement after 300 ms (the statement timeout, 30 s in production). */
  let hasty: DataSource;
  let poison: (...ids: string[]) => Promise<unknown>;
  /** Makes these operations' matches slower than any statement timeout. */
  let slow: (...ids: string[]) => Promise<unknown>;
  let a: number;
  let b: number;

  const sweep = (on: DataSource = db.dataSource, o: { chunksPerRun?: number; matchBudgetMs?: number } = {}, repository = new BulkOperationsRepository(on), metrics = new SweepMetrics(new MetricsService())) =>
    new BulkOperationsSweep(repository, queue, { hotHorizonMs: 24 * HOUR, maxJobs: 1_000_000, chunksPerRun: o.chunksPerRun ?? 100, matchBudgetMs: o.matchBudgetMs }, metrics);
  const operation = async (tenantId: number, filter: BulkFilter) => (await repo.create(tenantId, 'cancel', filter, null, 5))!.op;
  const read = async (op: BulkOperationRecord) => (await repo.findForTenant(op.tenantId, op.id))!;
  const chunkRows = async () => Number((await db.dataSource.query(`SELECT count(*) AS n FROM bulk_operation_chunks`))[0].n);
  const newTenants = async (n: number): Promise<number[]> =>
    (await db.dataSource.query<{ id: number }[]>(`INSERT INTO tenants (name) SELECT 't-' || gen_random_uuid() FROM generate_series(1, $1) RETURNING id`, [n])).map((r) => r.id);

  /**
   * Runs `fn` while matches that find jobs wait: another transaction holds the table the chunk
   * poison's trigger reads as they write their chunks (nothing else reads it).
   */
  async function whileMatchesHeld<T>(fn: () => Promise<T>): Promise<T> {
    const holder = db.dataSource.createQueryRunner();
    await holder.startTransaction();
    try {
      await holder.query(`LOCK TABLE poisoned_operations IN ACCESS EXCLUSIVE MODE`);
      return await fn();
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    repo = new BulkOperationsRepository(db.dataSource);
    impatient = createDataSource({ url: db.url, poolSize: 2, lockTimeoutMs: 100 });
    hasty = createDataSource({ url: db.url, poolSize: 2, statementTimeoutMs: 300 });
    await Promise.all([impatient.initialize(), hasty.initialize()]);
    [a, b] = await newTenants(2);
    poison = await installChunkPoison(db.dataSource);
    slow = await installSlowChunks(db.dataSource);
  });
  beforeEach(async () => {
    queue = HotQueue.open(redis.connection, `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`);
    await db.dataSource.query('TRUNCATE jobs, bulk_operations, bulk_operation_chunks, poisoned_operations, slow_operations');
  });
  afterEach(async () => queue.close());
  afterAll(async () => {
    await Promise.all([impatient.destroy(), hasty.destroy()]);
    await redis.cleanup();
    await db.drop();
  });

  it("a match that keeps timing out holds no other tenant's chunks back, backs off, and fails at the third with a reason to narrow the filter", async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR), prefix: 'wide' });
    const free = await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(48 * HOUR), prefix: 'free' });
    const opB = await operation(b, { keyPrefix: 'free-' });
    await sweep(db.dataSource, { chunksPerRun: 0 }).runOnce(NOW); // b's is running, its chunk not applied
    const opA = await operation(a, { keyPrefix: 'wide-' });
    await slow(opA.id);
    const s = sweep(hasty);
    const run = s.runOnce(NOW);
    await someoneSleeps(db.dataSource); // a's match, until its statement timeout
    expect(await read(opB)).toMatchObject({ state: 'done', changed: 5 }); // before: after a's 30 s
    await run;
    expect(await read(opA)).toMatchObject({ state: 'pending', failures: 1, lastingFailures: 1 });
    const matched = jest.spyOn(BulkOperationsRepository.prototype, 'match');
    await s.runOnce(NOW);
    expect(matched).not.toHaveBeenCalled(); // backing off: not tried again at once
    matched.mockRestore();
    for (let i = 1; i <= 2; i++) await ageLastFailure(db.dataSource, opA.id, i * 10_000).then(() => s.runOnce(NOW));
    expect(await read(opA)).toMatchObject({ state: 'failed', error: expect.stringMatching(/statement timeout 3 times in a row: narrow the filter/) });
    expect(await statesOf(db.dataSource, free)).toEqual({ c: 5 });
    expect(await chunkRows()).toBe(0);
  });

  it('fails an operation only at three failures in a row whose cause lasts: lock timeouts before them do not count toward it', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    const s = sweep(impatient);
    await whileMatchesHeld(async () => {
      await s.runOnce(NOW); // its chunks' INSERT waits on the held table: a lock timeout
      await ageLastFailure(db.dataSource, op.id, 10_000).then(() => s.runOnce(NOW));
    });
    expect(await read(op)).toMatchObject({ state: 'pending', failures: 2, lastingFailures: 0 });
    await poison(op.id); // now Postgres refuses a value of it
    await ageLastFailure(db.dataSource, op.id, 20_000).then(() => s.runOnce(NOW));
    expect(await read(op)).toMatchObject({ state: 'pending', failures: 3, lastingFailures: 1 }); // before: failed
    await ageLastFailure(db.dataSource, op.id, 30_000).then(() => s.runOnce(NOW));
    expect(await read(op)).toMatchObject({ state: 'pending', lastingFailures: 2 });
    await ageLastFailure(db.dataSource, op.id, 40_000).then(() => s.runOnce(NOW));
    expect(await read(op)).toMatchObject({ state: 'failed', error: expect.stringMatching(/match failed 3 times in a row: a value Postgres refused \(22003\)/) });
  });

  it('a match that waits on a lock for its whole statement timeout meets a lock timeout first: it backs off, and never fails for it', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    const s = sweep(hasty); // no lock timeout, as with ALMANAC_PG_LOCK_TIMEOUT_MS=0
    await whileMatchesHeld(async () => {
      await s.runOnce(NOW);
      for (let i = 1; i <= 3; i++) await ageLastFailure(db.dataSource, op.id, i * 10_000).then(() => s.runOnce(NOW));
    });
    expect(await read(op)).toMatchObject({ state: 'pending', failures: 4, lastingFailures: 0 }); // before: failed at the third, "narrow the filter"
    await ageLastFailure(db.dataSource, op.id, 40_000).then(() => s.runOnce(NOW));
    expect(await read(op)).toMatchObject({ state: 'done', changed: 5 });
  });

  it('a cancel does not wait on a match in flight: it answers at once, and the match makes no chunks', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    const run = await whileMatchesHeld(async () => {
      const running = sweep().runOnce(NOW);
      await someoneWaitsOnALock(db.dataSource);
      expect(await new BulkOperationsRepository(impatient).cancel(a, op.id)).toMatchObject({ state: 'cancelled' }); // before: a lock timeout (503)
      return { running };
    });
    expect(await run.running).toMatchObject({ matched: 0, chunks: 0 });
    expect(await read(op)).toMatchObject({ state: 'cancelled', matched: null, changed: 0 });
    expect(await statesOf(db.dataSource, ids)).toEqual({ s: 5 });
    expect(await chunkRows()).toBe(0);
  });

  it('two replicas whose matches of the same operation fail one after the other fail it once: set aside counts it once', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await poison(op.id);
    const [one, two] = [1, 2].map(() => ({ repository: new BulkOperationsRepository(db.dataSource), metrics: new SweepMetrics(new MetricsService()) }))
      .map((r) => ({ ...r, sweep: sweep(db.dataSource, {}, r.repository, r.metrics) }));
    for (let i = 1; i <= 2; i++) await one.sweep.runOnce(NOW).then(() => ageLastFailure(db.dataSource, op.id, i * 10_000));
    // Two reads the operation (due, two lasting failures) and matches only once one has counted
    // the third; one fails it only once two is done.
    let twoMatches!: () => void;
    let oneCounted!: () => void;
    const [twoMatching, counted] = [new Promise<void>((r) => (twoMatches = r)), new Promise<void>((r) => (oneCounted = r))];
    const [match, fail] = [two.repository.match.bind(two.repository), one.repository.fail.bind(one.repository)];
    jest.spyOn(two.repository, 'match').mockImplementation(async (...args) => {
      twoMatches();
      await counted;
      return match(...args);
    });
    const twoRun = two.sweep.runOnce(NOW);
    await twoMatching;
    jest.spyOn(one.repository, 'fail').mockImplementation(async (...args) => {
      oneCounted();
      await twoRun;
      return fail(...args);
    });
    await one.sweep.runOnce(NOW);
    expect(await read(op)).toMatchObject({ state: 'failed', lastingFailures: 3, error: expect.stringMatching(/match failed 3 times in a row: a value Postgres refused \(22003\)/) });
    const setAside = async (r: typeof one) => (await r.metrics.setAside.get()).values.find((v) => v.labels.statement === 'bulk_match')?.value ?? 0;
    expect((await setAside(one)) + (await setAside(two))).toBe(1); // before: 2
  });

  it("a run whose window holds only failing pending operations looks past it next run: they no longer keep a later tenant's chunks out", async () => {
    const failing = await newTenants(150);
    const [late] = await newTenants(1);
    await insertJobs(db.dataSource, { tenantId: late, count: 5, start: at(48 * HOUR) });
    const lateOp = await operation(late, { kind: 'noop' });
    await sweep(db.dataSource, { chunksPerRun: 0 }).runOnce(NOW); // running, its chunk not applied
    const ops = [];
    for (const t of failing) ops.push((await operation(t, { kind: 'noop' })).id);
    await poison(...ops);
    const s = sweep(db.dataSource, { matchBudgetMs: 0 }); // one match a run
    await s.runOnce(NOW);
    await s.runOnce(NOW);
    expect(await read(lateOp)).toMatchObject({ state: 'done', changed: 5 }); // before: never
  });
});

/**
 * Makes chosen bulk operations' matches slow, as a filter that reads too many rows: a trigger
 * sleeps a minute as their chunks are written, until the statement timeout cancels it.
 */
async function installSlowChunks(db: DataSource): Promise<(...ids: string[]) => Promise<unknown>> {
  await db.query(`CREATE TABLE slow_operations (id bigint PRIMARY KEY)`);
  await db.query(`CREATE FUNCTION slow_chunks() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF EXISTS (SELECT 1 FROM slow_operations WHERE id = NEW.operation_id) THEN PERFORM pg_sleep(60); END IF;
    RETURN NEW; END $$`);
  await db.query(`CREATE TRIGGER slow_chunks BEFORE INSERT ON bulk_operation_chunks FOR EACH ROW EXECUTE FUNCTION slow_chunks()`);
  return (...ids) => db.query(`INSERT INTO slow_operations SELECT unnest($1::bigint[])`, [ids]);
}

/** Waits until some statement in `db`'s database is in pg_sleep; throws if none ever is. */
async function someoneSleeps(db: DataSource): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const [{ n }]: { n: number }[] = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`);
    if (n > 0) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('no statement ever slept');
}
