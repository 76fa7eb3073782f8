import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { type HandlerDefinition, HandlerRegistry, KindAssertion, kindMigrations, kindRegistrations, KindRoutes, parsePoolMap } from '@almanac/kinds';
import { createDataSource, type DatabaseConfig, ExecutionRepository, KindsRepository, type MigrationClass, runKindMigrations, WorkersRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, DatabaseClock, DELIVERY_REDIS, HotQueue, Liveness, exportPoolScaling, MetricsService, REDIS, type RedisClient, TenantLabels } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { Executor } from './executor';
import { Heartbeat } from './heartbeat';
import { PoolTaker } from './pool-taker';
import { WorkerIdentity } from './worker-identity';
import type { WorkerSettings } from './worker-settings';

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
  /** This worker's kinds in the registry, asserted at boot and every 30 s. */
  readonly kindAssertion: KindAssertion;
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
    kinds: KindsRepository,
    clock: Clock,
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
    const registrations = kindRegistrations(registry, routes, settings.pools);
    this.kindAssertion = new KindAssertion(kinds, registrations, settings.workerId, logger, registry);
    this.migrations = kindMigrations(registry, registrations);
    this.database = config.database;
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
    await this.kindAssertion.runOnce();
    await this.beatSource.initialize();
    await this.identity.register();
    this.logger.info({ kinds: this.kindAssertion.registrations.map((r) => `${r.kind}@${r.pool}`), id: this.identity.id }, 'kinds registered');
  }

  onApplicationBootstrap(): void {
    this.kindAssertion.start();
    this.tenantLabels.start();
    this.heartbeat.start();
    this.taker.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    const asserting = this.kindAssertion.stop(); // a turn in progress finishes beside the drain
    await this.heartbeat.leave(); // capacity no longer counted; beats and lease renewals go on while handlers drain
    await this.taker.close(this.settings.shutdownMs);
    await this.heartbeat.stop();
    await asserting;
    this.tenantLabels.stop();
    await this.beatSource.destroy().catch((err: unknown) => this.logger.warn({ err }, 'could not close the heartbeat connection'));
  }
}
