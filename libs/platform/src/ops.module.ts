import { createDataSource } from '@almanac/persistence';
import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Inject, Injectable, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { RedisClient } from './redis/redis';
import { DataSource } from 'typeorm';
import { LoggerModule, PinoLogger } from 'nestjs-pino';
import { Clock, SystemClock } from './clock/clock';
import { ALMANAC_CONFIG, AlmanacConfig, loadConfig } from './config/almanac-config';
import { Env } from '@almanac/config';
import { HealthController, READY_NEEDS, type ReadyNeed } from './health/health.controller';
import { Liveness } from './health/liveness';
import { PostgresPing } from './health/postgres-ping';
import { RedisHealthIndicator } from './health/redis.health';
import { loggerParams } from './logging/logging';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import { RedisMetrics } from './metrics/redis-metrics';
import { HOT_QUEUE_NAME, HOT_QUEUE_OPTIONS, HotQueue } from './queues/hot-queue';
import { stopTracing } from './tracing/tracing';
import { closeRedis, createDeliveryRedis, createRedis, DELIVERY_REDIS, hotQueuePrefix, REDIS, redisTarget } from './redis/redis';

/**
 * What OpsModule opened, reachable from outside Nest: if app creation fails half-way Nest runs
 * no shutdown hooks, so the creator closes these itself (bootstrap in tests must not leak).
 */
export class OpsResources {
  redis?: RedisClient;
  deliveryRedis?: RedisClient;
  queueRedis?: RedisClient;
  hotQueue?: HotQueue;
  dataSource?: DataSource;

  async close(): Promise<void> {
    if (this.hotQueue) await this.hotQueue.close().catch(() => undefined);
    if (this.redis) await closeRedis(this.redis);
    if (this.deliveryRedis) await closeRedis(this.deliveryRedis);
    if (this.queueRedis) await closeRedis(this.queueRedis);
    if (this.dataSource?.isInitialized) await this.dataSource.destroy().catch(() => undefined);
  }
}

export interface OpsModuleOptions {
  /** Already validated config; otherwise `loadConfig(env ?? process.env)` runs here. */
  config?: AlmanacConfig;
  env?: Env;
  /** Appears as `role` on every log line. */
  role?: string;
  resources?: OpsResources;
  /** What `/health/ready` checks: Postgres and Redis unless told. */
  readyNeeds?: readonly ReadyNeed[];
}

/**
 * Closes what OpsModule opened, in the last shutdown phase: feature modules stop their workers
 * in onModuleDestroy/beforeApplicationShutdown while the shared connection is still up.
 */
@Injectable()
class OpsLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(DELIVERY_REDIS) private readonly deliveryRedis: RedisClient,
    private readonly hotQueue: HotQueue,
    private readonly redisMetrics: RedisMetrics,
    private readonly resources: OpsResources,
  ) {}

  onModuleInit(): void {
    this.redisMetrics.trackQueue(() => this.hotQueue.queue);
  }

  /** BullModule closes its Workers in this same phase; they share, never own, the connection. */
  async onApplicationShutdown(): Promise<void> {
    await this.hotQueue.close();
    await closeRedis(this.redis);
    await closeRedis(this.deliveryRedis);
    if (this.resources.queueRedis) await closeRedis(this.resources.queueRedis);
    await stopTracing(); // the spans of the last jobs leave before the process does
  }
}

/** TypeORM keeps retrying a refused connection briefly (Postgres restarting), then boot fails. */
const DB_CONNECT_ATTEMPTS = 3;
const DB_RETRY_DELAY_MS = 1000;

/**
 * Everything a role needs from the platform, once per process: config, DataSource, logging,
 * the Redis connections (REDIS for commands with a timeout, DELIVERY_REDIS for the pools' ready
 * lists, BullMQ's own for the hot queue), metrics, health, clock and the hot queue. Global, so
 * feature modules inject these without importing anything. Only `bootstrapRole` (or a test)
 * imports it.
 *
 * `BullModule.forRootAsync` and `registerQueue` put the hot queue's @Processor (the dispatcher's
 * HotConsumer) on BullMQ's connection and the queue prefix. The producer is `HotQueue.open` on that
 * prefix, with a producer connection of its own (no offline queue, see HotQueue). BullMQ
 * defines its ~50 scripts on the connection it is given, and ioredis copies every defined script
 * onto each auto-pipeline it opens: on the ready lists' connection that was ~25% of a worker's
 * CPU at 500 jobs/s (a CPU profile), so BullMQ has a connection of its own, not auto-pipelined.
 */
@Module({})
export class OpsModule {
  static forRoot(options: OpsModuleOptions = {}): DynamicModule {
    const config = options.config ?? loadConfig(options.env ?? process.env);
    const role = options.role ?? 'almanac';
    const resources = options.resources ?? new OpsResources();
    const deliveryRedis = () => (resources.deliveryRedis ??= createDeliveryRedis(redisTarget(config)));
    const queuePrefix = hotQueuePrefix(config.queuePrefix, config.redisClusterNodes !== null);
    const queueRedis = () => (resources.queueRedis ??= createDeliveryRedis(redisTarget(config), { autoPipelining: false }));
    return {
      module: OpsModule,
      global: true,
      imports: [
        LoggerModule.forRoot(loggerParams(config, role)),
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            ...createDataSource(config.database).options,
            retryAttempts: DB_CONNECT_ATTEMPTS,
            retryDelay: DB_RETRY_DELAY_MS,
            toRetry: (err: unknown) => isConnectionRefused(err),
          }),
          dataSourceFactory: async (dsOptions) => {
            if (!dsOptions) throw new Error('TypeORM gave no DataSource options');
            resources.dataSource = new DataSource(dsOptions);
            return resources.dataSource.initialize();
          },
        }),
        TerminusModule.forRoot({ errorLogStyle: 'json' }),
        BullModule.forRootAsync({ useFactory: () => ({ connection: queueRedis(), prefix: queuePrefix }) }),
        // Without a registered queue BullModule creates no Worker for its @Processor; this Queue
        // only lends the Worker its connection and prefix (HotQueue adds on its own).
        BullModule.registerQueue({ name: HOT_QUEUE_NAME, ...HOT_QUEUE_OPTIONS }),
      ],
      controllers: [HealthController, MetricsController],
      providers: [
        { provide: ALMANAC_CONFIG, useValue: config },
        { provide: READY_NEEDS, useValue: options.readyNeeds ?? ['postgres', 'redis'] },
        {
          provide: REDIS,
          inject: [PinoLogger],
          useFactory: (pino: PinoLogger) =>
            (resources.redis = createRedis(redisTarget(config), { commandTimeoutMs: config.redisCommandTimeoutMs, logger: pino.logger.child({ component: 'redis' }) })),
        },
        { provide: DELIVERY_REDIS, useFactory: deliveryRedis },
        { provide: OpsResources, useValue: resources },
        {
          provide: HotQueue,
          useFactory: () => (resources.hotQueue = HotQueue.open(queueRedis(), queuePrefix, config.redisCommandTimeoutMs)),
        },
        { provide: Clock, useClass: SystemClock },
        MetricsService,
        RedisMetrics,
        RedisHealthIndicator,
        PostgresPing,
        Liveness,
        OpsLifecycle,
      ],
      exports: [ALMANAC_CONFIG, REDIS, DELIVERY_REDIS, HotQueue, Clock, MetricsService, RedisMetrics, Liveness],
    };
  }
}

function isConnectionRefused(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === '57P03'; // 57P03: the database system is starting up
}
