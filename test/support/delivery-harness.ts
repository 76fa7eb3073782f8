import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { HandlerDefinition, HandlerRegistry, KindCatalog, kindRegistrations, KindRoutes } from '@almanac/kinds';
import { DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY, type Hint, RetryPolicy } from '@almanac/domain';
import { ExecutionRepository, KindsRepository, SweepsRepository, TenantsRepository, WorkersRepository } from '@almanac/persistence';
import { Clock, DatabaseClock, HOT_QUEUE_NAME, HotQueue, MetricsService, readSetting, type RedisClient, SystemClock } from '@almanac/platform';
import { Executor, Heartbeat, PoolTaker, WorkerIdentity } from '@almanac/worker-runtime';
import { BullModule } from '@nestjs/bullmq';
import { Test, TestingModule } from '@nestjs/testing';
import pino from 'pino';
import type { DataSource } from 'typeorm';
import { Dispatcher } from '../../apps/dispatcher/src/dispatcher';
import { DISPATCHER_LOGGER, HOT_CONSUMER_SETTINGS, HotConsumer, HotConsumerSettings } from '../../apps/dispatcher/src/hot-consumer';
import { PoolObserver } from '../../apps/dispatcher/src/pool-observer';
import { LostHints } from '../../apps/promoter/src/overdue/lost-hints';
import { RescueSweep } from '../../apps/promoter/src/rescue/rescue.sweep';
import { createTestDatabase, TestDatabase } from './test-db';
import { createTestRedis, TestRedis } from './test-redis';

/**
 * Real Postgres (a database per test file) and real Redis (a prefix per test file) with the
 * dispatcher, workers and the promoter's rescue wired as in production, driven one tick at a
 * time with runOnce(). It lives under test/ because it composes apps, which no app may do.
 */
export interface JobSeed {
  kind: string;
  key?: string;
  tenantId?: number;
  payload?: unknown;
  maxAttempts?: number;
  runAt?: Date;
  /** The W3C traceparent of the span that created the job (ingest's), as the API keeps it. */
  traceParent?: string;
}

export interface JobRowView {
  id: string;
  state: string;
  attempts: number;
  run_at: Date;
  lease_until: Date | null;
  claimed_by: number | null;
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
  identity: WorkerIdentity;
  executor: Executor;
  taker: PoolTaker;
  heartbeat: Heartbeat;
  metrics: DeliveryMetrics;
  metricsService: MetricsService;
}

export class DeliveryHarness {
  readonly repo: ExecutionRepository;
  readonly hotQueue: HotQueue;
  readonly ready: ReadyQueues;
  readonly workers: WorkersRepository;
  readonly routes: KindRoutes;
  readonly dispatcher: Dispatcher;
  /** Tenants' weights and limits as the observer reads them and copies them into the pools. */
  /** The dispatcher's once-a-second look: routes, shares, gauges. */
  readonly observer: PoolObserver;
  /** The hot consumer's clock: the dispatcher's own, set by the database's when `dispatcherClock` was given. */
  readonly dispatcherTime: DatabaseClock;
  /** The promoter's rescue of dead workers' work (see rescueWith for a sweep with another watch). */
  readonly rescue: RescueSweep;
  /** The hot queue's @Processor, its Worker created by BullModule as in the dispatcher role (see init). */
  hot!: HotConsumer;
  private nest?: TestingModule;
  readonly metricsService = new MetricsService();
  readonly metrics = new DeliveryMetrics(this.metricsService);
  readonly logger = pino({ level: readSetting(process.env, 'ALMANAC_TEST_LOG') });
  private readonly rigs: WorkerRig[] = [];
  private seq = 0;

  constructor(
    readonly db: TestDatabase,
    readonly redis: TestRedis,
    readonly registry: HandlerRegistry,
    readonly clock: Clock,
    readonly poolMap: ReadonlyMap<string, string>,
    readonly leaseMs: number,
    dispatcherClock?: Clock,
  ) {
    this.repo = new ExecutionRepository(db.dataSource);
    this.hotQueue = HotQueue.open(redis.connection, redis.prefix);
    this.ready = new ReadyQueues(redis.connection, redis.prefix);
    this.workers = new WorkersRepository(db.dataSource);
    this.routes = new KindRoutes(poolMap);
    this.dispatcher = new Dispatcher(this.routes, this.ready, this.metrics);
    this.dispatcherTime = new DatabaseClock(dispatcherClock ?? clock);
    this.observer = new PoolObserver({
      routes: this.routes, ready: this.ready, workers: this.workers, metrics: this.metrics, logger: this.logger, tenants: new TenantsRepository(db.dataSource),
      clock: this.dispatcherTime, time: dispatcherClock ? this.dispatcherTime : undefined,
      catalog: new KindCatalog(new KindsRepository(db.dataSource), { maxAgeMs: 0, missRefreshMs: 0 }),
    });
    this.rescue = new RescueSweep(this.workers, new SweepsRepository(db.dataSource), this.ready, this.hotQueue, { batchSize: 500 });
  }

  /** The overdue sweep's view of which overdue rows have lost their hint. */
  lostHints(): LostHints {
    return new LostHints(this.routes, new KindCatalog(new KindsRepository(this.ds), { maxAgeMs: 0, missRefreshMs: 0 }), this.ready);
  }

  /** A rescue sweep whose watch finds dead whom `look` says (the real one waits WORKER_DEAD_AFTER_MS of unbroken watch). */
  rescueWith(look: () => number[], batchSize = 500): RescueSweep {
    return new RescueSweep(this.workers, new SweepsRepository(this.ds), this.ready, this.hotQueue, { batchSize, watch: { look } });
  }

  /** Builds the hot consumer the way the dispatcher role does: BullModule on this test's connection and prefix. */
  async init(): Promise<this> {
    // The handlers' kinds, registered as their workers would at boot (each in its routed pool).
    const routes = KindRoutes.forHandlers(this.poolMap, this.registry.all());
    await this.registerKinds(this.registry.all().map((h) => routes.pool(h.kind)), 'test-harness');
    await this.observer.runOnce();
    const settings: HotConsumerSettings = { concurrency: 100 };
    this.nest = await Test.createTestingModule({
      imports: [
        BullModule.forRoot({ connection: this.redis.connection, prefix: this.redis.prefix }),
        BullModule.registerQueue({ name: HOT_QUEUE_NAME }),
      ],
      providers: [
        { provide: Dispatcher, useValue: this.dispatcher },
        { provide: HotQueue, useValue: this.hotQueue },
        { provide: DatabaseClock, useValue: this.dispatcherTime },
        { provide: HOT_CONSUMER_SETTINGS, useValue: settings },
        { provide: DISPATCHER_LOGGER, useValue: this.logger },
        HotConsumer,
      ],
    }).compile();
    await this.nest.init();
    this.hot = this.nest.get(HotConsumer);
    return this;
  }

  /** What a worker serving `pools` registers at boot (WorkerService.onModuleInit). */
  private async registerKinds(pools: readonly string[], workerId: string): Promise<void> {
    const routes = KindRoutes.forHandlers(this.poolMap, this.registry.all());
    await new KindsRepository(this.ds).register(kindRegistrations(this.registry, routes, pools), workerId);
  }

  get ds(): DataSource {
    return this.db.dataSource;
  }

  /**
   * A worker serving `pools`, as one worker process would; it registers itself (its row in
   * `workers`) on its first turn. With `dataSource`, it has its own Postgres connections (a
   * process of its own, as far as the database can tell: the double-run kit kills them).
   */
  worker(
    opts: {
      pools?: string[]; workerId?: string; retryPolicy?: RetryPolicy; concurrency?: number; claimRetryForMs?: number; dataSource?: DataSource;
      /** The executor's largest group commit; its claims hold a third of it (default 500). */
      maxBatch?: number;
      /** What the taker duplicates for its own connections (default: this test's Redis). */
      takerConnection?: RedisClient;
      /** The worker's own clock, set by the database's at each beat as in a worker process (default: the harness clock, unset). */
      clock?: Clock;
      /** The handlers it runs (default: the harness's), e.g. another build's definition of a kind. */
      registry?: HandlerRegistry;
    } = {},
  ): WorkerRig {
    const metricsService = new MetricsService();
    const metrics = new DeliveryMetrics(metricsService);
    const name = opts.workerId ?? `test-worker-${this.rigs.length + 1}`;
    const pools = opts.pools ?? ['default'];
    const concurrency = opts.concurrency ?? 10;
    const ds = opts.dataSource ?? this.ds;
    const time = opts.clock ? new DatabaseClock(opts.clock) : undefined;
    const clock = time ?? this.clock;
    const identity = new WorkerIdentity(new WorkersRepository(ds), name, pools, concurrency, this.logger, time);
    const executor = new Executor({
      repo: opts.dataSource ? new ExecutionRepository(opts.dataSource) : this.repo, dataSource: ds, registry: opts.registry ?? this.registry, hotQueue: this.hotQueue,
      clock, logger: this.logger, metrics, identity, leaseMs: this.leaseMs,
      horizons: DEFAULT_HORIZONS, retryPolicy: opts.retryPolicy ?? DEFAULT_RETRY_POLICY, claimRetryForMs: opts.claimRetryForMs, maxBatch: opts.maxBatch,
    });
    const taker = new PoolTaker({ connection: opts.takerConnection ?? this.redis.connection, ready: this.ready, pools, concurrency, executor, identity, clock, logger: this.logger });
    const heartbeat = new Heartbeat({ identity, taker, executor, logger: this.logger });
    const rig = { identity, executor, taker, heartbeat, metrics, metricsService };
    this.rigs.push(rig);
    return rig;
  }

  /** A worker that has registered its kinds and itself (one heartbeat), and a dispatcher that has seen it. */
  async liveWorker(opts: Parameters<DeliveryHarness['worker']>[0] = {}): Promise<WorkerRig> {
    const rig = this.worker(opts);
    await this.registerKinds(opts.pools ?? ['default'], 'test-worker');
    await rig.heartbeat.runOnce();
    await this.observer.runOnce();
    return rig;
  }

  /** One turn of a worker as its process would run it: a heartbeat, then everything its pools hold, run to completion. */
  async runWorker(rig: WorkerRig, max?: number): Promise<number> {
    await rig.heartbeat.runOnce();
    return rig.taker.runOnce(max);
  }

  /** As runWorker, but starts the worker's own take loop instead of one pass. */
  async startWorker(rig: WorkerRig): Promise<void> {
    await rig.heartbeat.runOnce();
    rig.taker.start();
  }

  /** Inserts queued rows due now (or at runAt) and gives them hints on the hot queue, as the API does. */
  async enqueue(seeds: JobSeed[]): Promise<string[]> {
    const now = this.clock.now();
    const rows: { id: string }[] = await this.ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, payload, max_attempts, state, trace_parent)
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[], $6::int2[], $7::"char"[], $8::text[])
       RETURNING id::text AS id`,
      [
        seeds.map((s) => s.tenantId ?? 1),
        seeds.map((s) => s.key ?? `k-${++this.seq}-${Math.random().toString(36).slice(2)}`),
        seeds.map((s) => s.kind),
        seeds.map((s) => s.runAt ?? now),
        seeds.map((s) => (s.payload === undefined ? null : JSON.stringify(s.payload))),
        seeds.map((s) => s.maxAttempts ?? 3),
        seeds.map(() => 'q'),
        seeds.map((s) => s.traceParent ?? null),
      ],
    );
    await this.hotQueue.enqueue(rows.map((r, i) => this.hint(r.id, seeds[i], now)), now);
    return rows.map((r) => r.id);
  }

  /** A hint of a row as `enqueue` seeded it. */
  hint(id: string, seed: JobSeed, now = this.clock.now()): Hint {
    return { id, tenantId: seed.tenantId ?? 1, kind: seed.kind, dueMs: (seed.runAt ?? now).getTime() };
  }

  async job(id: string): Promise<JobRowView> {
    const rows: JobRowView[] = await this.ds.query(
      `SELECT id::text AS id, state, attempts, run_at, lease_until, claimed_by, finished_at, result, last_error FROM jobs WHERE id = $1`,
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

  /** Row ids with a hint in the hot queue, by BullMQ state (`delayed` or `waiting`). */
  async hotIds(state: 'delayed' | 'waiting'): Promise<string[]> {
    return (await this.hotQueue.held()).filter((x) => x.state === state).map((x) => x.hint.id);
  }

  /** Ids waiting in a pool's flows, flow by flow in order. */
  async readyIds(pool = 'default'): Promise<string[]> {
    const keys = (await this.redis.connection.keys(`${this.ready.base(pool)}:q:*`)).sort();
    const out: string[] = [];
    for (const key of keys) for (const item of await this.redis.connection.lrange(key, 0, -1)) out.push(item.split(':')[0]);
    return out;
  }

  async close(): Promise<void> {
    for (const r of this.rigs) {
      await r.heartbeat.stop();
      await r.taker.close(0).catch(() => undefined);
    }
    await this.hot?.close().catch(() => undefined);
    await this.nest?.close();
    await this.hotQueue.close();
  }
}

export async function createHarness(opts: {
  handlers: HandlerDefinition[];
  clock?: Clock;
  /** The dispatcher's own clock, set by the database's at each observe as in a dispatcher process (default: the harness clock, unset). */
  dispatcherClock?: Clock;
  poolMap?: ReadonlyMap<string, string>;
  leaseMs?: number;
}): Promise<DeliveryHarness> {
  const db = await createTestDatabase(12);
  const redis: TestRedis = await createTestRedis();
  return new DeliveryHarness(db, redis, new HandlerRegistry(opts.handlers), opts.clock ?? new SystemClock(), opts.poolMap ?? new Map(), opts.leaseMs ?? 30_000, opts.dispatcherClock).init();
}

export async function destroyHarness(h: DeliveryHarness | undefined): Promise<void> {
  if (!h) return;
  await h.close();
  await h.redis.cleanup();
  await h.db.drop();
}
