import { BULK_CHUNK_JOBS, type BulkChange, type BulkFilter } from '@almanac/domain';
import { BULK_CREATE_LOCK, BulkOperationsRepository, TenantsRepository } from '@almanac/persistence';
import { DELIVERY_LEAD_MS, HotQueue, MetricsService } from '@almanac/platform';
import { ageLastFailure, installChunkPoison, whileJobRowHeld } from '@almanac/testing/bulk-operations';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import pino from 'pino';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { envelopeOf, inQueue, insertJobs, statesOf } from '@almanac/testing/promoter-rows';
import { BulkOperationsSweep } from './bulk-operations.sweep';
import { createTenants } from '@almanac/testing/tenant-rows';

const HOUR = 3600e3;
const NOW = new Date('2026-12-02T10:00:00Z');
const at = (ms: number) => new Date(NOW.getTime() + ms);

describe('BulkOperationsSweep (Postgres + Redis)', () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let queue: HotQueue;
  let repo: BulkOperationsRepository;
  let a: number;
  let b: number;
  /** Makes these operations' matches fail: Postgres refuses their chunks, with a message only the operator may read. */
  let poison: (...ids: string[]) => Promise<unknown>;
  const SECRET = 'internal-host-db7:5432 secret';

  const sweep = (o: { maxJobs?: number; chunksPerRun?: number; matchBudgetMs?: number } = {}) =>
    new BulkOperationsSweep(repo, queue, { hotHorizonMs: 24 * HOUR, maxJobs: o.maxJobs ?? 1_000_000, chunksPerRun: o.chunksPerRun ?? 100, matchBudgetMs: o.matchBudgetMs }, new SweepMetrics(new MetricsService()));
  const operation = async (tenantId: number, filter: BulkFilter, change: BulkChange | null = null) =>
    (await repo.create(tenantId, change ? 'reschedule' : 'cancel', filter, change, 5))!.op;
  const read = async (tenantId: number, id: string) => (await repo.findForTenant(tenantId, id))!;
  const runAts = async (ids: string[]) =>
    (await db.dataSource.query<{ run_at: Date }[]>(`SELECT run_at FROM unnest($1::bigint[]) WITH ORDINALITY AS u (id, n) JOIN jobs USING (id) ORDER BY n`, [ids])).map((r) =>
      r.run_at.getTime(),
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    repo = new BulkOperationsRepository(db.dataSource);
    [a, b] = await createTenants(db.dataSource, 'a', 'b');
    poison = await installChunkPoison(db.dataSource, SECRET);
  });
  beforeEach(async () => {
    queue = HotQueue.open(redis.connection, `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`);
    await db.dataSource.query('TRUNCATE jobs, bulk_operations, bulk_operation_chunks, poisoned_operations');
  });
  afterEach(async () => queue.close());
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it("applies other tenants' chunks while a slow match reads: one tenant's match held them, run after run (review)", async () => {
    const opsB: { id: string }[] = [];
    for (let i = 0; i < 3; i++) {
      await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(48 * HOUR), prefix: `b${i}-` });
      opsB.push(await operation(b, { keyPrefix: `b${i}-` }));
    }
    await sweep({ chunksPerRun: 0 }).runOnce(NOW); // B's are running, no chunk applied
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR), prefix: 'slow-' });
    const opA = await operation(a, { keyPrefix: 'slow-' });
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const match = repo.match.bind(repo);
    const slow = jest.spyOn(repo, 'match').mockImplementation(async (...args) => gate.then(() => match(...args))); // a match reading millions of rows
    try {
      const run = sweep({ chunksPerRun: 1, matchBudgetMs: 20 }).runOnce(NOW);
      const states = () => Promise.all(opsB.map(async (op) => (await read(b, op.id)).state));
      for (let i = 0; i < 500 && !(await states()).every((st) => st === 'done'); i++); // each look a round trip
      expect(await states()).toEqual(['done', 'done', 'done']); // before: one chunk, then the match's whole wait
      release();
      expect(await run).toMatchObject({ matched: 1, chunks: 3, more: true });
      await sweep().runOnce(NOW);
      expect((await read(a, opA.id)).state).toBe('done');
    } finally {
      release();
      slow.mockRestore();
    }
  });

  it("a chunk that keeps meeting a held row lock backs off and waits for the lock, however long, and then applies whole; another tenant's goes on in each run", async () => {
    const blocked = await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR), prefix: 'stuck' });
    const free = await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(48 * HOUR), prefix: 'free' });
    const opA = await operation(a, { keyPrefix: 'stuck-' });
    await sweep({ chunksPerRun: 0 }).runOnce(NOW); // matched, nothing applied yet
    const opB = await operation(b, { keyPrefix: 'free-' });
    const metrics = new SweepMetrics(new MetricsService());
    // The sweep waits at most 100 ms for a row lock; a transaction elsewhere holds one of A's rows.
    await whileJobRowHeld(db.dataSource, db.url, blocked[0], async (impatient) => {
      const s = new BulkOperationsSweep(new BulkOperationsRepository(impatient), queue, { hotHorizonMs: 24 * HOUR, maxJobs: 1000, chunksPerRun: 100 }, metrics);
      await s.runOnce(NOW);
      expect((await read(b, opB.id)).state).toBe('done');
      expect(await statesOf(db.dataSource, free)).toEqual({ c: 5 });
      const applied = jest.spyOn(s as unknown as { applyChunk: () => Promise<boolean> }, 'applyChunk');
      await s.runOnce(NOW); // backing off: not tried again at once
      expect(applied).not.toHaveBeenCalled();
      // Each try after its back-off (10 s, 20 s, 30 s) meets the lock again.
      for (let i = 1; i <= 3; i++) await ageLastFailure(db.dataSource, opA.id, i * 10_000).then(() => s.runOnce(NOW));
      // Four lock timeouts: counted, but the operation is not failed half done.
      expect(await read(a, opA.id)).toMatchObject({ state: 'running', failures: 4, lastingFailures: 0, changed: 0 });
      expect(await statesOf(db.dataSource, blocked)).toEqual({ s: 5 });
    });
    await ageLastFailure(db.dataSource, opA.id, 40_000);
    await sweep().runOnce(NOW); // the lock is released
    expect(await read(a, opA.id)).toMatchObject({ state: 'done', failures: 0, changed: 5, error: null });
    expect(await statesOf(db.dataSource, blocked)).toEqual({ c: 5 });
    expect((await metrics.setAside.get()).values.filter((v) => v.value > 0)).toEqual([]);
  });

  it('counts failed matches on the operation row and backs off 10 s a failure: fresh sweeps (a restart, another replica) fail it at the third', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await poison(op.id);
    for (let i = 0; i < 2; i++) await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'pending', failures: 1 }); // back to back: once
    await ageLastFailure(db.dataSource, op.id, 5_000);
    await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'pending', failures: 1 }); // 5 s later: still once
    await ageLastFailure(db.dataSource, op.id, 5_000);
    await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'pending', failures: 2, lastingFailures: 2 });
    await ageLastFailure(db.dataSource, op.id, 15_000);
    await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'pending', failures: 2 }); // 15 s of its 20
    await ageLastFailure(db.dataSource, op.id, 5_000);
    await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'failed', error: expect.stringMatching(/match failed 3 times in a row: a value Postgres refused/) });
  });

  it("fails an operation with the step, the count and the class of the cause, never Postgres' message (GET /v1/operations/:id answers it)", async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await poison(op.id);
    const logged: { operationId?: string; err?: { message: string } }[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const s = new BulkOperationsSweep(repo, queue, { hotHorizonMs: 24 * HOUR, maxJobs: 1_000_000, chunksPerRun: 100 }, undefined, log);
    for (let i = 0; i < 3; i++) await s.runOnce(NOW).then(() => ageLastFailure(db.dataSource, op.id, 60_000));
    expect(logged.filter((l) => l.operationId === op.id && l.err?.message.includes(SECRET))).toHaveLength(3); // the operator's, each try
    const { state, error } = await read(a, op.id);
    expect(state).toBe('failed');
    expect(error).toBe("its match failed 3 times in a row: a value Postgres refused (22003); the operator's logs have the details under this operation's id");
    expect(error).not.toMatch(/internal-host|5432|secret/); // before: the trigger's message
  });

  it('a match that succeeds clears the count: only failures in a row fail an operation', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await poison(op.id);
    await sweep().runOnce(NOW);
    await db.dataSource.query(`TRUNCATE poisoned_operations`);
    await ageLastFailure(db.dataSource, op.id);
    await sweep({ chunksPerRun: 0 }).runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'running', failures: 0 });
  });

  it("cancels the tenant's unstarted jobs that match, in chunks, and nothing else", async () => {
    const cold = await insertJobs(db.dataSource, { tenantId: a, count: BULK_CHUNK_JOBS + 10, start: at(48 * HOUR), prefix: 'campaign' });
    const queued = await insertJobs(db.dataSource, { tenantId: a, count: 20, start: at(HOUR), state: 'q', prefix: 'campaign' });
    await queue.enqueue(queued.map((id) => ({ id, dueMs: at(HOUR + Number(id) % 7).getTime(), tenantId: a, kind: 'noop' })), NOW);
    const running = await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(-1000), state: 'r', prefix: 'campaign' });
    const otherKey = await insertJobs(db.dataSource, { tenantId: a, count: 5, start: at(48 * HOUR), prefix: 'newsletter' });
    const otherTenant = await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(48 * HOUR), prefix: 'campaign' });

    const op = await operation(a, { keyPrefix: 'campaign-' });
    expect(op.state).toBe('pending');
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ matched: 1, chunks: 2, changed: BULK_CHUNK_JOBS + 30 });

    expect(await statesOf(db.dataSource, [...cold, ...queued])).toEqual({ c: BULK_CHUNK_JOBS + 30 });
    expect(await statesOf(db.dataSource, running)).toEqual({ r: 3 });
    expect(await statesOf(db.dataSource, otherKey)).toEqual({ s: 5 });
    expect(await statesOf(db.dataSource, otherTenant)).toEqual({ s: 5 });
    expect(await inQueue(queue, queued)).toBe(20); // their hints stay, stale: a worker's claim drops them
    expect(await read(a, op.id)).toMatchObject({ state: 'done', matched: BULK_CHUNK_JOBS + 30, chunks: 2, changed: BULK_CHUNK_JOBS + 30, skipped: 0 });
    expect(await repo.findForTenant(b, op.id)).toBeNull(); // another tenant's operation
    expect(Number((await db.dataSource.query(`SELECT count(*) AS n FROM bulk_operation_chunks`))[0].n)).toBe(0);
  });

  it('resumes after a crash at the first chunk not applied, and counts a job that started meanwhile as skipped', async () => {
    // Chunks go in id order, and ids made in one millisecond are not in insertion order.
    const ids = (await insertJobs(db.dataSource, { tenantId: a, count: 2 * BULK_CHUNK_JOBS + 1, start: at(48 * HOUR) })).sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1));
    const op = await operation(a, { kind: 'noop' });
    expect(await sweep({ chunksPerRun: 1 }).runOnce(NOW)).toMatchObject({ chunks: 1, changed: BULK_CHUNK_JOBS, more: true });
    // The process dies here; a job of the next chunk starts before another replica takes over.
    await db.dataSource.query(`UPDATE jobs SET state = 'r' WHERE id = $1`, [ids[BULK_CHUNK_JOBS]]);
    await sweep({ chunksPerRun: 100 }).runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'done', matched: ids.length, changed: ids.length - 1, skipped: 1 });
    expect(await statesOf(db.dataSource, ids)).toEqual({ c: ids.length - 1, r: 1 });
  });

  it('locks only the rows a chunk can change: a started job whose row its worker holds (a lease renewal) does not hold the chunk up', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await repo.match(op, 1000);
    await db.dataSource.query(`UPDATE jobs SET state = 'r' WHERE id = $1`, [ids[1]]); // started after the match
    const out = await whileJobRowHeld(db.dataSource, db.url, ids[1], (impatient) =>
      new BulkOperationsRepository(impatient).apply({ ...op, state: 'running' }, 0, at(24 * HOUR)));
    expect(out).toMatchObject({ applied: true, state: 'done', changed: 2, skipped: 1 });
    expect(await statesOf(db.dataSource, ids)).toEqual({ c: 2, r: 1 });
  });

  it('a job claimed while the chunk waits for its row is skipped, not cancelled under its worker', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(HOUR), state: 'q' });
    const op = await operation(a, { kind: 'noop' });
    await repo.match(op, 1000);
    const claim = db.dataSource.createQueryRunner(); // a worker's claim, as far as its uncommitted UPDATE
    await claim.startTransaction();
    try {
      await claim.query(`UPDATE jobs SET state = 'r' WHERE id = $1`, [ids[2]]);
      const applying = repo.apply({ ...op, state: 'running' }, 0, at(24 * HOUR));
      await someoneWaitsOnALock(db.dataSource);
      await claim.commitTransaction();
      expect(await applying).toMatchObject({ applied: true, changed: 2, skipped: 1 });
    } finally {
      if (claim.isTransactionActive) await claim.rollbackTransaction();
      await claim.release();
    }
    expect(await statesOf(db.dataSource, ids)).toEqual({ c: 2, r: 1 });
  });

  it('a cancelled operation stops: the chunks applied stay, the others are never applied', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: 2 * BULK_CHUNK_JOBS + 1, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await sweep({ chunksPerRun: 1 }).runOnce(NOW);
    expect(await repo.cancel(b, op.id)).toBeNull(); // another tenant's
    expect(await repo.cancel(a, op.id)).toMatchObject({ state: 'cancelled', changed: BULK_CHUNK_JOBS });
    expect(await repo.cancel(a, op.id)).toBeNull(); // no longer open
    await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'cancelled', matched: ids.length, chunks: 3, changed: BULK_CHUNK_JOBS, skipped: 0 });
    expect(await statesOf(db.dataSource, ids)).toEqual({ c: BULK_CHUNK_JOBS, s: BULK_CHUNK_JOBS + 1 });
    expect(Number((await db.dataSource.query(`SELECT count(*) AS n FROM bulk_operation_chunks`))[0].n)).toBe(0);
  });

  it('a chunk another replica applied first is not applied again', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 10, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await repo.match(op, 1000);
    const first = await repo.apply(op, 0, at(24 * HOUR));
    const again = await repo.apply(op, 0, at(24 * HOUR));
    expect(first).toMatchObject({ applied: true, state: 'done', changed: 10 });
    expect(again).toEqual({ applied: false });
    expect(await read(a, op.id)).toMatchObject({ changed: 10, skipped: 0 });
  });

  it('fails an operation whose filter matches more than the limit, changing nothing', async () => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: 11, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' });
    await sweep({ maxJobs: 10 }).runOnce(NOW);
    const failed = await read(a, op.id);
    expect(failed.state).toBe('failed');
    expect(failed.error).toMatch(/more than 10 jobs/);
    expect(await statesOf(db.dataSource, ids)).toEqual({ s: 11 });
  });

  it('reschedules each matched job once, re-tiered by its new time, with a hot copy at the new time', async () => {
    // 24 h of hot horizon: +23 h stays hot, +25 h leaves it.
    const hot = await insertJobs(db.dataSource, { tenantId: a, count: 4, start: at(HOUR), stepMs: 1000, state: 'q' });
    await queue.enqueue(hot.map((id, i) => ({ id, dueMs: at(HOUR + i * 1000).getTime(), tenantId: a, kind: 'noop' })), NOW);
    const before = await runAts(hot);
    // The filter's range still holds every row after the move: a cursor over it would meet them again.
    const op = await operation(a, { runAtFrom: NOW, runAtTo: at(30 * HOUR) }, { shiftBySeconds: 1800 });
    await sweep().runOnce(NOW);
    expect(await runAts(hot)).toEqual(before.map((t) => t + 1_800_000));
    expect(await statesOf(db.dataSource, hot)).toEqual({ q: 4 });
    // A new hint at the new time (the old one, at the old time, is stale and the claim drops it).
    const held = await envelopeOf(queue, hot[0]);
    expect(held?.hints.find((x) => x.id === hot[0])?.dueMs).toBe(before[0] + 1_800_000);
    const copy = held?.job;
    // Reckoned from the run's time plus what the run has taken so far (ms here).
    const delay = before[0] + 1_800_000 - NOW.getTime() - DELIVERY_LEAD_MS;
    expect(copy?.opts.delay).toBeLessThanOrEqual(delay);
    expect(copy?.opts.delay).toBeGreaterThan(delay - 5000);
    expect(await read(a, op.id)).toMatchObject({ state: 'done', changed: 4 });

    const hints = await queue.queue.getJobCountByTypes('delayed');
    const far = await operation(a, { state: 'queued' }, { runAt: at(25 * HOUR) });
    await sweep().runOnce(NOW);
    expect(await statesOf(db.dataSource, hot)).toEqual({ s: 4 });
    expect(await queue.queue.getJobCountByTypes('delayed')).toBe(hints); // cold again: no new hint
    expect(await read(a, far.id)).toMatchObject({ state: 'done', changed: 4 });
  });

  it('rows a reschedule made queued whose hints the hot queue refuses go back to scheduled, at their new time', async () => {
    const hot = await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(HOUR), stepMs: 1000, state: 'q' });
    const op = await operation(a, { kind: 'noop' }, { runAt: at(10 * 60_000) });
    const refusing = { enqueue: () => Promise.reject(new Error('redis is reconnecting')) };
    await new BulkOperationsSweep(repo, refusing, { hotHorizonMs: 24 * HOUR, maxJobs: 1000, chunksPerRun: 10 }).runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'done', changed: 3 });
    expect(await statesOf(db.dataSource, hot)).toEqual({ s: 3 }); // promotion publishes them in time
    expect(await runAts(hot)).toEqual(hot.map(() => at(10 * 60_000).getTime()));
  });

  it('a shift that would move a job past the run times the API accepts leaves that job alone, counted as skipped', async () => {
    const [late] = await insertJobs(db.dataSource, { tenantId: a, count: 1, start: new Date('9999-12-31T12:00:00Z') });
    const [fine] = await insertJobs(db.dataSource, { tenantId: a, count: 1, start: at(48 * HOUR) });
    const op = await operation(a, { kind: 'noop' }, { shiftBySeconds: 86_400 });
    await sweep().runOnce(NOW);
    expect(await read(a, op.id)).toMatchObject({ state: 'done', changed: 1, skipped: 1 });
    expect(await runAts([late, fine])).toEqual([Date.parse('9999-12-31T12:00:00Z'), at(72 * HOUR).getTime()]);
  });

  it('a replica that finds a chunk already applied adds no hints', async () => {
    const hot = await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(HOUR), stepMs: 1000, state: 'q' });
    await queue.enqueue(hot.map((id, i) => ({ id, dueMs: at(HOUR + i * 1000).getTime(), tenantId: a, kind: 'noop' })), NOW);
    const op = await operation(a, { kind: 'noop' }, { shiftBySeconds: 60 });
    const late = sweep(); // read the operation at chunk 0 too, then lost the race
    const stale = (await repo.findForTenant(a, op.id))!;
    await sweep().runOnce(NOW);
    const hints = await queue.queue.getJobCountByTypes('delayed'); // the old ones and new ones at the new times
    const result = { matched: 0, chunks: 0, changed: 0 };
    const applyChunk = (late as unknown as { applyChunk(o: typeof stale, c: number, n: Date, r: typeof result): Promise<boolean> }).applyChunk.bind(late);
    expect(await applyChunk({ ...stale, state: 'running' }, 0, NOW, result)).toBe(false);
    expect(await queue.queue.getJobCountByTypes('delayed')).toBe(hints);
  });

  it('counts the open-operations limit under a lock: a request waits for one in flight and sees it', async () => {
    // Another request, as far as its uncommitted INSERT: it holds the tenant's lock.
    const inFlight = db.dataSource.createQueryRunner();
    await inFlight.connect();
    await inFlight.startTransaction();
    try {
      await inFlight.query(`SELECT pg_advisory_xact_lock($1, $2)`, [BULK_CREATE_LOCK, a]);
      await inFlight.query(`INSERT INTO bulk_operations (tenant_id, action, filter) VALUES ($1, 'cancel', '{}')`, [a]);
      const second = repo.create(a, 'cancel', { kind: 'noop' }, null, 1);
      await someoneWaitsOnALock(db.dataSource);
      await inFlight.commitTransaction();
      expect(await second).toBeNull(); // before: it counted no open operation and made a second
    } finally {
      if (inFlight.isTransactionActive) await inFlight.rollbackTransaction();
      await inFlight.release();
    }
  });

  it('starts each run one tenant further on, so more tenants with open operations than chunks per run all get turns', async () => {
    const ops = [];
    for (let t = 0; t < 3; t++) {
      const tenant = (await new TenantsRepository(db.dataSource).create(`turns-${t}-${Date.now()}`)).tenant.id;
      await insertJobs(db.dataSource, { tenantId: tenant, count: 2 * BULK_CHUNK_JOBS, start: at(48 * HOUR) });
      ops.push(await operation(tenant, { kind: 'noop' }));
    }
    const s = sweep({ chunksPerRun: 2 });
    await s.runOnce(NOW); // the first two operations, one chunk each
    await s.runOnce(NOW); // starts one further on: the second and the third
    const progress = await Promise.all(ops.map(async (o) => (await read(o.tenantId, o.id)).nextChunk));
    expect(progress.every((n) => n >= 1)).toBe(true);
  });

  it("takes turns between tenants, not operations: one tenant's 100+ open operations neither keep another's out of the run nor get more turns", async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 10, start: at(48 * HOUR) });
    for (let i = 0; i < 101; i++) await repo.create(a, 'cancel', { kind: 'noop' }, null, 1000);
    const small = await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(48 * HOUR) });
    const late = await operation(b, { kind: 'noop' });
    await sweep({ chunksPerRun: 2, matchBudgetMs: 60_000 }).runOnce(NOW);
    expect(await read(b, late.id)).toMatchObject({ state: 'done', changed: 5 });
    expect(await statesOf(db.dataSource, small)).toEqual({ c: 5 });
    const [{ n }] = await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM bulk_operations WHERE tenant_id = $1 AND next_chunk > 0`, [a]);
    expect(n).toBe(1); // one turn for all of a's operations
  });

  it('takes turns between operations: one tenant\'s large operation does not hold another\'s behind it', async () => {
    await insertJobs(db.dataSource, { tenantId: a, count: 3 * BULK_CHUNK_JOBS, start: at(48 * HOUR) });
    const small = await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(48 * HOUR) });
    const big = await operation(a, { kind: 'noop' });
    const quick = await operation(b, { kind: 'noop' });
    await sweep({ chunksPerRun: 2 }).runOnce(NOW);
    expect(await read(b, quick.id)).toMatchObject({ state: 'done', changed: 5 });
    expect(await statesOf(db.dataSource, small)).toEqual({ c: 5 });
    expect(await read(a, big.id)).toMatchObject({ state: 'running', changed: BULK_CHUNK_JOBS });
  });
});
