import { ExecutionRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, closeRedis, MetricsService, RedisMetrics } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type IORedis from 'ioredis';
import { PinoLogger } from 'nestjs-pino';
import { DeliveryMetrics } from '../../worker/src/delivery/delivery-metrics';
import { createDeliveryRedis } from '../../worker/src/delivery/delivery-redis';
import { allHandlers, HandlerRegistry } from '../../worker/src/handlers';
import { handlerSettingsFromEnv } from '../../worker/src/handlers/handler-settings';
import { Dispatcher } from './dispatcher';
import { DispatcherSettings } from './dispatcher-settings';
import { HotConsumer } from './hot-consumer';
import { KindRoutes } from './kind-routes';
import { PoolQueues } from './pool-queues';

export const DISPATCHER_SETTINGS = Symbol('DISPATCHER_SETTINGS');

/** Wires the dispatcher into the Nest lifecycle: consume the hot queue from boot, stop on SIGTERM. */
@Injectable()
export class DispatchService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly dispatcher: Dispatcher;
  readonly consumer: HotConsumer;
  readonly pools: PoolQueues;
  private readonly redis: IORedis;

  constructor(
    @Inject(DISPATCHER_SETTINGS) settings: DispatcherSettings,
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    repo: ExecutionRepository,
    clock: Clock,
    metrics: MetricsService,
    redisMetrics: RedisMetrics,
    pino: PinoLogger,
  ) {
    const logger = pino.logger.child({ component: 'dispatcher' });
    this.redis = createDeliveryRedis(config.redisUrl);
    this.redis.on('error', () => undefined); // the shared connection's owner logs Redis outages
    const registry = new HandlerRegistry(allHandlers(handlerSettingsFromEnv(process.env)));
    this.pools = new PoolQueues(this.redis, config.queuePrefix, (q) => redisMetrics.trackQueue(q));
    this.dispatcher = new Dispatcher({
      repo, clock, logger, pools: this.pools,
      routes: new KindRoutes(registry, settings.poolMap, settings.leaseMarginMs),
      metrics: new DeliveryMetrics(metrics),
      earlyMs: settings.earlyMs,
    });
    this.consumer = new HotConsumer({ connection: this.redis, prefix: config.queuePrefix, concurrency: settings.concurrency, dispatcher: this.dispatcher, logger });
  }

  onApplicationBootstrap(): void {
    this.consumer.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer.close();
    await this.pools.close();
    await closeRedis(this.redis);
  }
}
