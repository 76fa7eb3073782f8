import { DeliveryMetrics, HandlerDefinition, HandlerRegistry, KindCatalog, kindRegistrations, KindRoutes, LimitSlots, ReadyLists, WorkerRoster } from '@almanac/delivery';
import { DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY, RetryPolicy } from '@almanac/domain';
import { BacklogRepository, ExecutionRepository, KindsRepository, TenantsRepository } from '@almanac/persistence';
import { Clock, HOT_QUEUE_NAME, HotQueue, MetricsService, queueJobId, SystemClock } from '@almanac/platform';
import { BullModule } from '@nestjs/bullmq';
import { Test, TestingModule } from '@nestjs/testing';
import pino from 'pino';
import type { DataSource } from 'typeorm';
import { Dispatcher } from '../../apps/dispatcher/src/dispatcher';
import { DispatcherLoop } from '../../apps/dispatcher/src/dispatcher-loop';
import { DISPATCHER_LOGGER, HOT_CONSUMER_SETTINGS, HotConsumer, HotConsumerSettings } from '../../apps/dispatcher/src/hot-consumer';
import { LimitGate } from '../../apps/dispatcher/src/limit-gate';
import { PoolRoom } from '../../apps/dispatcher/src/pool-room';
import { TenantShares } from '../../apps/dispatcher/src/tenant-shares';
import { Executor, Heartbeat, PoolTaker } from '@almanac/worker-runtime';
import { createTestDatabase, TestDatabase } from './test-db';
import { createTestRedis, TestRedis } from './test-redis';

/**
 * Real Postgres (a database per test file) and real Redis (a prefix per test file) with the
 * dispatcher and workers wired as in production, driven one tick at a time with runOnce().
 * It lives under test/ because it composes two apps, which no app may do.
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
  taker: PoolTaker;
  heartbeat: Heartbeat;
  metrics: DeliveryMetrics;
  metricsService: MetricsService;
}

export class DeliveryHarness {
  readonly repo: ExecutionRepository;
  readonly backlog: BacklogRepository;
  readonly hotQueue: HotQueue;
  readonly ready: ReadyLists;
  readonly roster: WorkerRoster;
  readonly dispatcher: Dispatcher;
  /** Tenants' weights and limits as the dispatcher reads them (observe() refreshes). */
  readonly shares: TenantShares;
  readonly slots: LimitSlots;
  /** The dispatcher's refill-and-observe turn. */
  readonly loop: DispatcherLoop;
  /** The hot queue's @Processor, its Worker created by BullModule as in the dispatcher role (see init). */
  hot!: HotConsumer;
  private nest?: TestingModule;
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
    readonly poolMap: ReadonlyMap<string, string>,
    readonly leaseMs: number,
    /** How long a delivery may wait in a dispatcher line before it parks (production: 10 s). */
    maxLineWaitMs = 10_000,
  ) {
    this.repo = new ExecutionRepository(db.dataSource);
    this.backlog = new BacklogRepository(db.dataSource);
    this.hotQueue = HotQueue.open(redis.connection, redis.prefix);
    this.ready = new ReadyLists(redis.connection, redis.prefix);
    this.roster = new WorkerRoster(redis.connection, redis.prefix);
    this.shares = new TenantShares(new TenantsRepository(db.dataSource));
    this.slots = new LimitSlots(redis.connection, redis.prefix);
    this.dispatcher = new Dispatcher({
      routes: new KindRoutes(poolMap), catalog: new KindCatalog(new KindsRepository(db.dataSource), { maxAgeMs: 0, missRefreshMs: 0 }), ready: this.ready, roster: this.roster, backlog: this.backlog,
      shares: this.shares, gate: new LimitGate(this.slots, this.shares),
      room: new PoolRoom(this.roster, this.ready, 2), clock, metrics: this.metrics, logger: this.logger, maxRefill: 500, maxWaiting: 50, stallMs: 500, maxWaitMs: maxLineWaitMs,
    });
    this.loop = new DispatcherLoop(this.dispatcher, this.logger);
  }

  /** Builds the hot consumer the way the dispatcher role does: BullModule on this test's connection and prefix. */
  async init(): Promise<this> {
    // The handlers' kinds, registered as their workers would at boot (each in its routed pool).
    const routes = KindRoutes.forHandlers(this.poolMap, this.registry.all());
    await this.registerKinds(this.registry.all().map((h) => routes.pool(h.kind)), 'test-harness');
    const settings: HotConsumerSettings = { concurrency: 100, maxWaitingSlots: 50 };
    this.nest = await Test.createTestingModule({
      imports: [
        BullModule.forRoot({ connection: this.redis.connection, prefix: this.redis.prefix }),
        BullModule.registerQueue({ name: HOT_QUEUE_NAME }),
      ],
      providers: [
        { provide: Dispatcher, useValue: this.dispatcher },
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
    await new KindsRepository(this.ds).register(kindRegistrations(this.registry, routes, pools), workerId, this.clock.now());
  }

  get ds(): DataSource {
    return this.db.dataSource;
  }

  /**
   * A worker serving `pools`, as one worker process would. It is not alive for the dispatcher
   * until its heartbeat has run once (`rig.heartbeat.runOnce()`, or `liveWorker`). With
   * `dataSource`, it has its own Postgres connections (a process of its own, as far as the
   * database can tell: the double-run kit kills them to crash it).
   */
  worker(
    opts: { pools?: string[]; workerId?: string; retryPolicy?: RetryPolicy; concurrency?: number; claimLeadMs?: number; claimRetryPauseMs?: number; dataSource?: DataSource } = {},
  ): WorkerRig {
    const metricsService = new MetricsService();
    const metrics = new DeliveryMetrics(metricsService);
    const workerId = opts.workerId ?? `test-worker-${this.rigs.length + 1}`;
    const pools = opts.pools ?? ['default'];
    const concurrency = opts.concurrency ?? 10;
    const executor = new Executor({
      repo: opts.dataSource ? new ExecutionRepository(opts.dataSource) : this.repo, dataSource: opts.dataSource ?? this.ds, registry: this.registry, hotQueue: this.hotQueue, ready: this.ready,
      clock: this.clock, logger: this.logger, metrics, workerId, leaseMs: this.leaseMs,
      horizons: DEFAULT_HORIZONS, retryPolicy: opts.retryPolicy ?? DEFAULT_RETRY_POLICY, claimLeadMs: opts.claimLeadMs,
      claimRetryPauseMs: opts.claimRetryPauseMs,
    });
    const taker = new PoolTaker({ connection: this.redis.connection, ready: this.ready, pools, concurrency, executor, logger: this.logger });
    const heartbeat = new Heartbeat({
      roster: this.roster, taker, executor, clock: this.clock, logger: this.logger, workerId, pools, concurrency,
    });
    const rig = { executor, taker, heartbeat, metrics, metricsService };
    this.rigs.push(rig);
    return rig;
  }

  /** A worker that has registered its kinds and announced itself (one heartbeat), and a dispatcher that has seen it. */
  async liveWorker(opts: Parameters<DeliveryHarness['worker']>[0] = {}): Promise<WorkerRig> {
    const rig = this.worker(opts);
    await this.registerKinds(opts.pools ?? ['default'], 'test-worker');
    await rig.heartbeat.runOnce();
    await this.dispatcher.observe();
    return rig;
  }

  /**
   * One turn of a worker as its process would run it: heartbeat (so the dispatcher sees it),
   * a dispatcher refill from the backlog, then everything in the ready lists, run to completion.
   */
  async runWorker(rig: WorkerRig, max?: number): Promise<number> {
    await rig.heartbeat.runOnce();
    await this.dispatcher.observe();
    await this.dispatcher.refillOnce();
    return rig.taker.runOnce(max);
  }

  /** As runWorker, but starts the worker's own take loop instead of one pass. */
  async startWorker(rig: WorkerRig): Promise<void> {
    await rig.heartbeat.runOnce();
    await this.dispatcher.observe();
    await this.dispatcher.refillOnce();
    rig.taker.start();
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

  /** State of the row's hot-queue copy: `j-<id>`, or the worker's re-enqueue after `afterAttempt`. */
  async hotJobState(id: string, afterAttempt?: number): Promise<string> {
    const job = await this.hotQueue.queue.getJob(queueJobId(id, afterAttempt));
    return job ? await job.getState() : 'absent';
  }

  /** Ids waiting in a pool's ready list, in order. */
  async readyIds(pool = 'default'): Promise<string[]> {
    const items: string[] = await this.redis.connection.lrange(this.ready.key(pool), 0, -1);
    return items.map((i) => i.split(':')[0]);
  }

  async parkedIds(pool = 'default'): Promise<string[]> {
    const rows: { id: string }[] = await this.ds.query(`SELECT job_id::text AS id FROM dispatch_backlog WHERE pool = $1 ORDER BY run_at, job_id`, [pool]);
    return rows.map((r) => r.id);
  }

  async close(): Promise<void> {
    for (const r of this.rigs) {
      await r.heartbeat.stop();
      await r.taker.close(0).catch(() => undefined);
    }
    await this.loop.stop();
    await this.hot?.close().catch(() => undefined);
    await this.nest?.close();
    await this.hotQueue.close();
  }
}

export async function createHarness(opts: {
  handlers: HandlerDefinition[];
  clock?: Clock;
  poolMap?: ReadonlyMap<string, string>;
  leaseMs?: number;
  maxLineWaitMs?: number;
}): Promise<DeliveryHarness> {
  const db = await createTestDatabase(12);
  const redis: TestRedis = await createTestRedis();
  return new DeliveryHarness(db, redis, new HandlerRegistry(opts.handlers), opts.clock ?? new SystemClock(), opts.poolMap ?? new Map(), opts.leaseMs ?? 30_000, opts.maxLineWaitMs).init();
}

export async function destroyHarness(h: DeliveryHarness | undefined): Promise<void> {
  if (!h) return;
  await h.close();
  await h.redis.cleanup();
  await h.db.drop();
}
