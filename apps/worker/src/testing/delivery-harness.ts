import { DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY, RetryPolicy } from '@almanac/domain';
import { ExecutionRepository, queueJobId } from '@almanac/persistence';
import { Clock, HotQueue, MetricsService, SystemClock } from '@almanac/platform';
import { Queue } from 'bullmq';
import pino from 'pino';
import type { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../../../test/support/test-db';
import { createTestRedis, TestRedis } from '../../../../test/support/test-redis';
import { Dispatcher } from '../../../dispatcher/src/dispatcher';
import { HotConsumer } from '../../../dispatcher/src/hot-consumer';
import { KindRoutes } from '../../../dispatcher/src/kind-routes';
import { PoolQueues } from '../../../dispatcher/src/pool-queues';
import { DeliveryMetrics } from '../delivery/delivery-metrics';
import { Executor } from '../delivery/executor';
import { PoolConsumer } from '../delivery/pool-consumer';
import type { HandlerDefinition } from '../handlers/handler';
import { HandlerRegistry } from '../handlers/registry';

/**
 * Real Postgres (a database per test file) and real Redis (a prefix per test file) with the
 * dispatcher and a worker wired as in production, driven one tick at a time with runOnce().
 */
export interface JobSeed {
  kind: string;
  key?: string;
  tenantId?: number;
  payload?: unknown;
  maxAttempts?: number;
  runAt?: Date;
}

export interface JobRowView {
  id: string;
  state: string;
  attempts: number;
  run_at: Date;
  lease_until: Date | null;
  finished_at: Date | null;
  result: unknown;
  last_error: string | null;
}

export interface AttemptRowView {
  attempt: number;
  outcome: string | null;
  worker_id: string | null;
  error: string | null;
  result: unknown;
  started_at: Date;
  finished_at: Date | null;
}

export interface WorkerRig {
  executor: Executor;
  consumer: PoolConsumer;
  metrics: DeliveryMetrics;
  metricsService: MetricsService;
}

export class DeliveryHarness {
  readonly repo: ExecutionRepository;
  readonly hotQueue: HotQueue;
  readonly poolQueues: PoolQueues;
  readonly dispatcher: Dispatcher;
  readonly hot: HotConsumer;
  readonly metricsService = new MetricsService();
  readonly metrics = new DeliveryMetrics(this.metricsService);
  readonly logger = pino({ level: process.env.ALMANAC_TEST_LOG ?? 'silent' });
  private readonly rigs: WorkerRig[] = [];
  private seq = 0;

  constructor(
    readonly db: TestDatabase,
    readonly redis: TestRedis,
    readonly registry: HandlerRegistry,
    readonly clock: Clock,
    poolMap: ReadonlyMap<string, string>,
  ) {
    this.repo = new ExecutionRepository(db.dataSource);
    this.hotQueue = new HotQueue(redis.connection, redis.prefix);
    this.poolQueues = new PoolQueues(redis.connection, redis.prefix);
    this.dispatcher = new Dispatcher({
      repo: this.repo, routes: new KindRoutes(registry, poolMap, 60_000), pools: this.poolQueues,
      clock, metrics: this.metrics, logger: this.logger, earlyMs: 1000,
    });
    this.hot = new HotConsumer({ connection: redis.connection, prefix: redis.prefix, concurrency: 100, dispatcher: this.dispatcher, logger: this.logger });
  }

  get ds(): DataSource {
    return this.db.dataSource;
  }

  /** A worker serving `pools`, as one worker process would. */
  worker(opts: { pools?: string[]; workerId?: string; retryPolicy?: RetryPolicy; concurrency?: number } = {}): WorkerRig {
    const metricsService = new MetricsService();
    const metrics = new DeliveryMetrics(metricsService);
    const executor = new Executor({
      repo: this.repo, dataSource: this.ds, registry: this.registry, hotQueue: this.hotQueue, clock: this.clock,
      logger: this.logger, metrics, workerId: opts.workerId ?? `test-worker-${this.rigs.length + 1}`,
      horizons: DEFAULT_HORIZONS, retryPolicy: opts.retryPolicy ?? DEFAULT_RETRY_POLICY,
    });
    const consumer = new PoolConsumer({
      connection: this.redis.connection, prefix: this.redis.prefix, pools: opts.pools ?? ['default'],
      concurrency: opts.concurrency ?? 10, executor, logger: this.logger,
    });
    const rig = { executor, consumer, metrics, metricsService };
    this.rigs.push(rig);
    return rig;
  }

  /** Inserts queued rows due now (or at runAt) and puts them on the hot queue, as the API does. */
  async enqueue(seeds: JobSeed[]): Promise<string[]> {
    const now = this.clock.now();
    const rows: { id: string }[] = await this.ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state)
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[], $6::int2[], $7::"char"[])
       RETURNING id::text AS id`,
      [
        seeds.map((s) => s.tenantId ?? 1),
        seeds.map((s) => s.key ?? `k-${++this.seq}-${Math.random().toString(36).slice(2)}`),
        seeds.map((s) => s.kind),
        seeds.map((s) => s.runAt ?? now),
        seeds.map((s) => (s.payload === undefined ? null : JSON.stringify(s.payload))),
        seeds.map((s) => s.maxAttempts ?? 3),
        seeds.map(() => 'q'),
      ],
    );
    await this.hotQueue.enqueue(
      rows.map((r, i) => ({ id: r.id, runAt: seeds[i].runAt ?? now, tenantId: seeds[i].tenantId ?? 1, kind: seeds[i].kind })),
      now,
    );
    return rows.map((r) => r.id);
  }

  async job(id: string): Promise<JobRowView> {
    const rows: JobRowView[] = await this.ds.query(
      `SELECT id::text AS id, state, attempts, run_at, lease_until, finished_at, result, last_error FROM jobs WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  async attempts(id: string): Promise<AttemptRowView[]> {
    return this.ds.query(
      `SELECT attempt, outcome, worker_id, error, result, started_at, finished_at FROM job_attempts WHERE job_id = $1 ORDER BY attempt`,
      [id],
    );
  }

  poolQueue(pool: string): Queue {
    return this.poolQueues.queue(pool) as Queue;
  }

  /** State of the row's hot-queue copy: `j-<id>`, or the worker's re-enqueue after `afterAttempt`. */
  async hotJobState(id: string, afterAttempt?: number): Promise<string> {
    const job = await this.hotQueue.queue.getJob(queueJobId(id, afterAttempt));
    return job ? await job.getState() : 'absent';
  }

  async poolCounts(pool: string): Promise<Record<string, number>> {
    return this.poolQueue(pool).getJobCounts('waiting', 'active', 'delayed');
  }

  async close(): Promise<void> {
    for (const r of this.rigs) await r.consumer.close(0).catch(() => undefined);
    await this.hot.close().catch(() => undefined);
    await this.poolQueues.close();
    await this.hotQueue.close();
  }
}

export async function createHarness(opts: {
  handlers: HandlerDefinition[];
  clock?: Clock;
  poolMap?: ReadonlyMap<string, string>;
}): Promise<DeliveryHarness> {
  const db = await createTestDatabase(12);
  const redis: TestRedis = await createTestRedis();
  return new DeliveryHarness(db, redis, new HandlerRegistry(opts.handlers), opts.clock ?? new SystemClock(), opts.poolMap ?? new Map());
}

export async function destroyHarness(h: DeliveryHarness | undefined): Promise<void> {
  if (!h) return;
  await h.close();
  await h.redis.cleanup();
  await h.db.drop();
}
