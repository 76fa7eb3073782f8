import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { type HandlerDefinition, HandlerRegistry, kindMigrations, kindRegistrations, KindRoutes, parsePoolMap } from '@almanac/kinds';
import { createDataSource, type DatabaseConfig, ExecutionRepository, KIND_ASSERT_EVERY_MS, type KindRegistration, KindsRepository, type MigrationClass, runKindMigrations, WorkersRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, DELIVERY_REDIS, HotQueue, Liveness, MetricsService, REDIS, type RedisClient, TenantLabels, Ticker } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { Executor } from './executor';
import { Heartbeat } from './heartbeat';
import { PoolTaker } from './pool-taker';
import { DatabaseClock } from './database-clock';
import { WorkerIdentity } from './worker-identity';
import { exportPoolScaling, type WorkerSettings } from './worker-settings';

export const WORKER_SETTINGS = Symbol('WORKER_SETTINGS');
/** The HandlerDefinition[] this worker runs (WorkerRuntimeModule.forRoot). */
export const WORKER_HANDLERS = Symbol('WORKER_HANDLERS');

/** Wires the executor, the pool taker and the heartbeat into the Nest lifecycle (start at boot, drain on SIGTERM). */
@Injectable()
export class WorkerService implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly identity: WorkerIdentity;
  readonly executor: Executor;
  readonly taker: PoolTaker;
  readonly heartbeat: Heartbeat;
  /** The tenants that get their own lag series (the promoter's top N); refreshed every 15 s. */
  readonly tenantLabels: TenantLabels;
  /** What this worker asserts in the kind registry, at boot and every KIND_ASSERT_EVERY_MS. */
  readonly registrations: KindRegistration[];
  private readonly assertion: Ticker;
  /** The tables of the kinds it registers (HandlerDefinition.migrations), applied first. */
  private readonly migrations: MigrationClass[];
  private readonly database: DatabaseConfig;
  private readonly logger: Logger;
  /** The heartbeat's own connection: beats queued behind the shared pool's claims and transactions would get the worker taken for dead. */
  private readonly beatSource: DataSource;

  constructor(
    @Inject(WORKER_SETTINGS) private readonly settings: WorkerSettings,
    @Inject(WORKER_HANDLERS) handlers: HandlerDefinition[],
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    @Inject(DELIVERY_REDIS) redis: RedisClient,
    @Inject(REDIS) commandRedis: RedisClient,
    dataSource: DataSource,
    repo: ExecutionRepository,
    private readonly kinds: KindsRepository,
    private readonly clock: Clock,
    hotQueue: HotQueue,
    metrics: MetricsService,
    pino: PinoLogger,
    liveness: Liveness,
  ) {
    const logger = (this.logger = pino.logger.child({ component: 'worker', workerId: settings.workerId }));
    const registry = new HandlerRegistry(handlers);
    this.beatSource = createDataSource({ ...config.database, poolSize: 1 });
    // Due times, claims and attempt stamps go by the database's clock, set at every beat.
    const time = new DatabaseClock(clock);
    this.identity = new WorkerIdentity(new WorkersRepository(this.beatSource), settings.workerId, settings.pools, settings.concurrency, logger, time);
    this.tenantLabels = new TenantLabels(commandRedis, config.queuePrefix);
    this.executor = new Executor({
      repo, dataSource, registry, hotQueue, clock: time, logger, identity: this.identity,
      metrics: new DeliveryMetrics(metrics, this.tenantLabels),
      horizons: config.horizons,
      retryPolicy: settings.retryPolicy,
      leaseMs: settings.leaseMs,
    });
    this.taker = new PoolTaker({
      connection: redis, ready: new ReadyQueues(redis, config.queuePrefix), pools: settings.pools,
      concurrency: settings.concurrency, executor: this.executor, identity: this.identity, clock: time, logger,
    });
    const routes = KindRoutes.forHandlers(parsePoolMap(process.env), handlers);
    this.registrations = kindRegistrations(registry, routes, settings.pools);
    this.migrations = kindMigrations(registry, this.registrations);
    this.database = config.database;
    this.assertion = new Ticker({
      turn: () => this.registerKinds(),
      everyMs: KIND_ASSERT_EVERY_MS,
      firstAfterMs: KIND_ASSERT_EVERY_MS,
      onError: (err) => logger.warn({ err }, 'could not assert the kinds in the registry; trying again'),
      unref: true,
    });
    this.heartbeat = new Heartbeat({ identity: this.identity, taker: this.taker, executor: this.executor, logger, liveness });
    exportPoolScaling(metrics, settings.pools, settings.scaling);
  }

  /**
   * Applies its kinds' migrations, then registers its kinds and itself before it takes work, so
   * the API accepts them and the dispatcher routes them.
   */
  async onModuleInit(): Promise<void> {
    const applied = await runKindMigrations(this.database, this.migrations);
    if (applied.length > 0) this.logger.info({ applied }, 'kind migrations applied');
    await this.registerKinds();
    await this.beatSource.initialize();
    await this.identity.register();
    this.logger.info({ kinds: this.registrations.map((r) => `${r.kind}@${r.pool}`), id: this.identity.id }, 'kinds registered');
  }

  /** Asserts this worker's kinds: the registry keeps the newest definition still asserted (REGISTER_KINDS_SQL). */
  async registerKinds(): Promise<void> {
    const moved = await this.kinds.register(this.registrations, this.settings.workerId, this.clock.now());
    for (const m of moved) this.logger.warn({ kind: m.kind, from: m.previousPool }, 'kind moved to another pool by this registration');
  }

  onApplicationBootstrap(): void {
    this.assertion.start();
    this.tenantLabels.start();
    this.heartbeat.start();
    this.taker.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.assertion.stop();
    await this.heartbeat.leave(); // capacity no longer counted; beats and lease renewals go on while handlers drain
    await this.taker.close(this.settings.shutdownMs);
    await this.heartbeat.stop();
    this.tenantLabels.stop();
    await this.beatSource.destroy().catch((err: unknown) => this.logger.warn({ err }, 'could not close the heartbeat connection'));
  }
}
