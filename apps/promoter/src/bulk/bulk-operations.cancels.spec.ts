import { BULK_CHUNK_JOBS } from '@almanac/domain';
import { BulkOperationsRepository } from '@almanac/persistence';
import { HotQueue, MetricsService } from '@almanac/platform';
import { whileJobRowHeld } from '@almanac/testing/bulk-operations';
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

/** A cancel beside a chunk in flight: it never waits on it, and no chunk row outlives the operation. */
describe('BulkOperationsSweep: a cancel beside a chunk in flight (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;
  let repo: BulkOperationsRepository;
  let a: number;

  const sweep = (on: DataSource = db.dataSource, o: { chunksPerRun?: number } = {}) =>
    new BulkOperationsSweep(new BulkOperationsRepository(on), queue, { hotHorizonMs: 24 * HOUR, maxJobs: 1_000_000, chunksPerRun: o.chunksPerRun ?? 100 }, new SweepMetrics(new MetricsService()));
  const operation = async (tenantId: number) => (await repo.create(tenantId, 'cancel', { kind: 'noop' }, null, 5))!.op;
  const read = async (op: { tenantId: number; id: string }) => (await repo.findForTenant(op.tenantId, op.id))!;
  const chunkRows = async () => Number((await db.dataSource.query(`SELECT count(*) AS n FROM bulk_operation_chunks`))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    repo = new BulkOperationsRepository(db.dataSource);
    [{ id: a }] = await db.dataSource.query<{ id: number }[]>(`INSERT INTO tenants (name) VALUES ('a') RETURNING id`);
  });
  beforeEach(async () => {
    queue = HotQueue.open(redis.connection, `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`);
    await db.dataSource.query('TRUNCATE jobs, bulk_operations, bulk_operation_chunks');
  });
  afterEach(async () => queue.close());
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it('a cancel does not wait on a chunk waiting for a row lock: that chunk, counted, is the last', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: BULK_CHUNK_JOBS + 1, start: at(48 * HOUR) });
    const op = await operation(a);
    await sweep(db.dataSource, { chunksPerRun: 0 }).runOnce(NOW);
    const run = await whileJobRowHeld(db.dataSource, db.url, ids[0], async (patientless) => {
      const running = sweep(db.dataSource, { chunksPerRun: 1 }).runOnce(NOW); // waits for the row
      await someoneWaitsOnALock(db.dataSource);
      expect(await new BulkOperationsRepository(patientless).cancel(a, op.id)).toMatchObject({ state: 'cancelled' }); // before: a lock timeout
      return { running };
    });
    await run.running;
    expect(await read(op)).toMatchObject({ state: 'cancelled', nextChunk: 1, changed: BULK_CHUNK_JOBS });
    expect(await statesOf(db.dataSource, ids)).toEqual({ c: BULK_CHUNK_JOBS, s: 1 });
    expect(await chunkRows()).toBe(0);
    await sweep().runOnce(NOW);
    expect(await statesOf(db.dataSource, ids)).toEqual({ c: BULK_CHUNK_JOBS, s: 1 }); // never applied
  });

  it('a chunk that fails after a cancel landed (its job row held past its lock timeout) leaves no chunk row behind', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: BULK_CHUNK_JOBS + 1, start: at(48 * HOUR) });
    const op = await operation(a);
    await sweep(db.dataSource, { chunksPerRun: 0 }).runOnce(NOW);
    await whileJobRowHeld(db.dataSource, db.url, ids[0], async () => {
      const running = sweep(db.dataSource, { chunksPerRun: 1 }).runOnce(NOW); // chunk 0 takes its chunk row, waits for the job row
      await someoneWaitsOnALock(db.dataSource);
      await repo.cancel(a, op.id); // removes chunk 1's row, skips chunk 0's
      // The chunk gives up, as at its lock timeout: its rollback brings chunk 0's row back.
      await db.dataSource.query(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      await running;
    });
    expect(await read(op)).toMatchObject({ state: 'cancelled', nextChunk: 0, changed: 0 });
    await sweep().runOnce(NOW);
    expect(await chunkRows()).toBe(0); // before: 1, until retention removed the operation
    expect(await statesOf(db.dataSource, ids)).toEqual({ s: BULK_CHUNK_JOBS + 1 });
  });

  it("a chunk whose promoter died as its operation was cancelled leaves no chunk row behind after the next run", async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: BULK_CHUNK_JOBS + 1, start: at(48 * HOUR) });
    const op = await operation(a);
    await sweep(db.dataSource, { chunksPerRun: 0 }).runOnce(NOW);
    const dying = db.dataSource.createQueryRunner(); // a chunk in flight, as far as its chunk row
    await dying.startTransaction();
    try {
      await dying.query(`SELECT 1 FROM bulk_operation_chunks WHERE operation_id = $1 AND chunk = 0 FOR UPDATE`, [op.id]);
      await repo.cancel(a, op.id); // removes chunk 1's row, skips chunk 0's
      expect(await chunkRows()).toBe(1);
    } finally {
      await dying.rollbackTransaction(); // its promoter dies: the row stays
      await dying.release();
    }
    await sweep().runOnce(NOW);
    expect(await chunkRows()).toBe(0); // before: 1, until retention removed the operation
    expect(await statesOf(db.dataSource, ids)).toEqual({ s: BULK_CHUNK_JOBS + 1 });
  });
});
