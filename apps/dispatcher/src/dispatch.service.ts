import { createDeliveryRedis, DeliveryMetrics, KindRoutes, ReadyLists, WorkerRoster } from '@almanac/delivery';
import { BacklogRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, closeRedis, Liveness, MetricsService } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type IORedis from 'ioredis';
import { PinoLogger } from 'nestjs-pino';
import { Dispatcher } from './dispatcher';
import { DispatcherLoop } from './dispatcher-loop';
import { DispatcherSettings } from './dispatcher-settings';
import { HotConsumer, MAX_ROOM_WAIT_MS } from './hot-consumer';
import { PoolRoom } from './pool-room';

export const DISPATCHER_SETTINGS = Symbol('DISPATCHER_SETTINGS');

/** Hot-consumer slots never spent waiting for a busy pool. */
const HOT_SLOTS_RESERVED = 50;

/**
 * Deliveries that may wait in this process for busy pools: a 100,000-job burst's first
 * 50,000 wait in memory (a few hundred bytes each), the rest park in the backlog.
 */
const MAX_WAITING_DELIVERIES = 50_000;

/**
 * A delivery waits in a line at most this long, then parks: well inside the overdue sweep's
 * default grace (30 s), so a pool that drains slowly but steadily never has the sweep enqueue a
 * second copy of a row that is still waiting here.
 */
const MAX_LINE_WAIT_MS = 10_000;

/** Wires the dispatcher into the Nest lifecycle: consume the hot queue from boot, stop on SIGTERM. */
@Injectable()
export class DispatchService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly dispatcher: Dispatcher;
  readonly consumer: HotConsumer;
  readonly loop: DispatcherLoop;
  private readonly redis: IORedis;

  constructor(
    @Inject(DISPATCHER_SETTINGS) settings: DispatcherSettings,
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    backlog: BacklogRepository,
    clock: Clock,
    metrics: MetricsService,
    pino: PinoLogger,
    liveness: Liveness,
  ) {
    const logger = pino.logger.child({ component: 'dispatcher' });
    this.redis = createDeliveryRedis(config.redisUrl);
    this.redis.on('error', () => undefined); // the shared connection's owner logs Redis outages
    const ready = new ReadyLists(this.redis, config.queuePrefix);
    const roster = new WorkerRoster(this.redis, config.queuePrefix);
    this.dispatcher = new Dispatcher({
      routes: new KindRoutes(settings.poolMap),
      ready, roster, backlog, clock, logger,
      room: new PoolRoom(roster, ready, settings.prefetch),
      metrics: new DeliveryMetrics(metrics),
      maxRefill: settings.concurrency,
      maxWaiting: MAX_WAITING_DELIVERIES,
      stallMs: MAX_ROOM_WAIT_MS,
      maxWaitMs: MAX_LINE_WAIT_MS,
    });
    this.consumer = new HotConsumer({
      connection: this.redis, prefix: config.queuePrefix, concurrency: settings.concurrency, dispatcher: this.dispatcher, logger,
      maxWaitingSlots: Math.max(1, settings.concurrency - HOT_SLOTS_RESERVED),
    });
    this.loop = new DispatcherLoop(this.dispatcher, logger, liveness);
  }

  onApplicationBootstrap(): void {
    this.consumer.start();
    this.loop.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer.close();
    await this.loop.stop();
    await closeRedis(this.redis);
  }
}
