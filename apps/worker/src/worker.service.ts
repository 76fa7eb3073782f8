import { ExecutionRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, closeRedis, HotQueue, MetricsService, poolQueueName, REDIS, RedisMetrics } from '@almanac/platform';
import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { PinoLogger } from 'nestjs-pino';
import { DataSource } from 'typeorm';
import { DeliveryMetrics } from './delivery/delivery-metrics';
import { createDeliveryRedis } from './delivery/delivery-redis';
import { Executor } from './delivery/executor';
import { PoolConsumer } from './delivery/pool-consumer';
import { allHandlers, HandlerRegistry } from './handlers';
import { handlerSettingsFromEnv } from './handlers/handler-settings';
import type { WorkerSettings } from './worker-settings';

export const WORKER_SETTINGS = Symbol('WORKER_SETTINGS');

/** Wires the executor and the pool consumers into the Nest lifecycle (start at boot, drain on SIGTERM). */
@Injectable()
export class WorkerService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly executor: Executor;
  readonly consumer: PoolConsumer;
  private readonly depthQueues: Queue[];
  private readonly redis: IORedis;

  constructor(
    @Inject(WORKER_SETTINGS) private readonly settings: WorkerSettings,
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    @Inject(REDIS) redis: IORedis,
    dataSource: DataSource,
    repo: ExecutionRepository,
    hotQueue: HotQueue,
    clock: Clock,
    metrics: MetricsService,
    redisMetrics: RedisMetrics,
    pino: PinoLogger,
  ) {
    const logger = pino.logger.child({ component: 'worker', workerId: settings.workerId });
    this.redis = createDeliveryRedis(config.redisUrl);
    this.redis.on('error', () => undefined); // the shared connection's owner logs Redis outages
    const registry = new HandlerRegistry(allHandlers(handlerSettingsFromEnv(process.env)));
    this.executor = new Executor({
      repo, dataSource, registry, hotQueue, clock, logger,
      metrics: new DeliveryMetrics(metrics),
      workerId: settings.workerId,
      horizons: config.horizons,
      retryPolicy: settings.retryPolicy,
    });
    this.consumer = new PoolConsumer({
      connection: this.redis, prefix: config.queuePrefix, pools: settings.pools,
      concurrency: settings.concurrency, executor: this.executor, logger,
    });
    // Queue depth per pool on /metrics (almanac_queue_jobs): what worker autoscaling reads.
    this.depthQueues = settings.pools.map((p) => new Queue(poolQueueName(p), { connection: redis, prefix: config.queuePrefix }));
    for (const q of this.depthQueues) {
      // As HotQueue and PoolQueues: connection errors are the connection owner's to report.
      q.on('error', () => undefined);
      redisMetrics.trackQueue(q);
    }
  }

  onApplicationBootstrap(): void {
    this.consumer.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.consumer.close(this.settings.shutdownMs);
    await Promise.all(this.depthQueues.map((q) => q.close().catch(() => undefined)));
    await closeRedis(this.redis);
  }
}
