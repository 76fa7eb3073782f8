import { DeliveryMetrics, type HandlerDefinition, HandlerRegistry, kindRegistrations, KindRoutes, parsePoolMap, ReadyLists, TenantLabels, WorkerRoster } from '@almanac/delivery';
import { ExecutionRepository, type KindRegistration, KindsRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, DELIVERY_REDIS, HotQueue, Liveness, MetricsService, REDIS, type RedisClient } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { Executor } from './executor';
import { Heartbeat } from './heartbeat';
import { exportPoolScaling } from './pool-scaling-gauges';
import { PoolTaker } from './pool-taker';
import type { WorkerSettings } from './worker-settings';

export const WORKER_SETTINGS = Symbol('WORKER_SETTINGS');
/** The HandlerDefinition[] this worker runs (WorkerRuntimeModule.forRoot). */
export const WORKER_HANDLERS = Symbol('WORKER_HANDLERS');

/** Wires the executor, the pool taker and the heartbeat into the Nest lifecycle (start at boot, drain on SIGTERM). */
@Injectable()
export class WorkerService implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly executor: Executor;
  readonly taker: PoolTaker;
  readonly heartbeat: Heartbeat;
  /** The tenants that get their own lag series (the promoter's top N); refreshed every 15 s. */
  readonly tenantLabels: TenantLabels;
  /** What this worker registers in the kind registry at boot. */
  readonly registrations: KindRegistration[];
  private readonly logger: Logger;

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
    const ready = new ReadyLists(redis, config.queuePrefix);
    this.tenantLabels = new TenantLabels(commandRedis, config.queuePrefix);
    this.executor = new Executor({
      repo, dataSource, registry, hotQueue, ready, clock, logger,
      metrics: new DeliveryMetrics(metrics, this.tenantLabels),
      workerId: settings.workerId,
      horizons: config.horizons,
      retryPolicy: settings.retryPolicy,
      leaseMs: settings.leaseMs,
      claimLeadMs: settings.claimLeadMs,
    });
    this.taker = new PoolTaker({
      connection: redis, ready, pools: settings.pools,
      concurrency: settings.concurrency, executor: this.executor, logger,
    });
    const routes = KindRoutes.forHandlers(parsePoolMap(process.env), handlers);
    this.registrations = kindRegistrations(registry, routes, settings.pools);
    this.heartbeat = new Heartbeat({
      roster: new WorkerRoster(redis, config.queuePrefix), taker: this.taker, executor: this.executor, clock, logger,
      workerId: settings.workerId, pools: settings.pools, concurrency: settings.concurrency,
      liveness,
    });
    exportPoolScaling(metrics, settings.pools, settings.scaling);
  }

  /** Registers this worker's kinds before it takes work, so the API accepts them and the dispatcher routes them. */
  async onModuleInit(): Promise<void> {
    const moved = await this.kinds.register(this.registrations, this.settings.workerId, this.clock.now());
    for (const m of moved) this.logger.warn({ kind: m.kind, from: m.previousPool }, 'kind moved to another pool by this registration');
    this.logger.info({ kinds: this.registrations.map((r) => `${r.kind}@${r.pool}`) }, 'kinds registered');
  }

  onApplicationBootstrap(): void {
    this.tenantLabels.start();
    this.heartbeat.start();
    this.taker.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.heartbeat.leave(); // no new work; leases keep being renewed while handlers drain
    await this.taker.close(this.settings.shutdownMs);
    await this.heartbeat.stop();
    this.tenantLabels.stop();
  }
}
