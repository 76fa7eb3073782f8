import { DeliveryMetrics, HandlerRegistry, KindRoutes, parsePoolMap, ReadyLists, WorkerRoster } from '@almanac/delivery';
import { ExecutionRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, DELIVERY_REDIS, HotQueue, Liveness, MetricsService } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type IORedis from 'ioredis';
import { PinoLogger } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { Executor } from './delivery/executor';
import { Heartbeat } from './delivery/heartbeat';
import { PoolTaker } from './delivery/pool-taker';
import { allHandlers } from './handlers';
import { handlerSettingsFromEnv } from './handlers/handler-settings';
import type { WorkerSettings } from './worker-settings';

export const WORKER_SETTINGS = Symbol('WORKER_SETTINGS');

/** kind → pool for the handlers this worker runs in its pools: what it registers for the dispatcher. */
export function servedKinds(registry: HandlerRegistry, routes: KindRoutes, pools: readonly string[]): Map<string, string> {
  const served = new Map<string, string>();
  for (const kind of registry.kinds()) {
    const pool = routes.pool(kind);
    if (pools.includes(pool)) served.set(kind, pool);
  }
  return served;
}

/** Wires the executor, the pool taker and the heartbeat into the Nest lifecycle (start at boot, drain on SIGTERM). */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly executor: Executor;
  readonly taker: PoolTaker;
  readonly heartbeat: Heartbeat;
  constructor(
    @Inject(WORKER_SETTINGS) private readonly settings: WorkerSettings,
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    @Inject(DELIVERY_REDIS) redis: IORedis,
    dataSource: DataSource,
    repo: ExecutionRepository,
    hotQueue: HotQueue,
    clock: Clock,
    metrics: MetricsService,
    pino: PinoLogger,
    liveness: Liveness,
  ) {
    const logger = pino.logger.child({ component: 'worker', workerId: settings.workerId });
    const handlers = allHandlers(handlerSettingsFromEnv(process.env));
    const registry = new HandlerRegistry(handlers);
    const ready = new ReadyLists(redis, config.queuePrefix);
    this.executor = new Executor({
      repo, dataSource, registry, hotQueue, ready, clock, logger,
      metrics: new DeliveryMetrics(metrics),
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
    const routes = new KindRoutes(parsePoolMap(process.env), new Map(handlers.map((h) => [h.kind, h.pool])));
    this.heartbeat = new Heartbeat({
      roster: new WorkerRoster(redis, config.queuePrefix), taker: this.taker, executor: this.executor, clock, logger,
      workerId: settings.workerId, pools: settings.pools, concurrency: settings.concurrency,
      kinds: servedKinds(registry, routes, settings.pools), liveness,
    });
  }

  onApplicationBootstrap(): void {
    this.heartbeat.start();
    this.taker.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.heartbeat.leave(); // no new work; leases keep being renewed while handlers drain
    await this.taker.close(this.settings.shutdownMs);
    await this.heartbeat.stop();
  }
}
