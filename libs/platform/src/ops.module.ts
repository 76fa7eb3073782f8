import { createDataSource } from '@almanac/persistence';
import { DynamicModule, Inject, Injectable, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import type IORedis from 'ioredis';
import { DataSource } from 'typeorm';
import { LoggerModule } from 'nestjs-pino';
import { Clock, SystemClock } from './clock/clock';
import { ALMANAC_CONFIG, AlmanacConfig, loadConfig } from './config/almanac-config';
import { Env } from './config/env';
import { HealthController } from './health/health.controller';
import { Liveness } from './health/liveness';
import { RedisHealthIndicator } from './health/redis.health';
import { loggerParams } from './logging/logging';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import { RedisMetrics } from './metrics/redis-metrics';
import { HotQueue } from './queues/hot-queue';
import { closeRedis, createRedis, REDIS } from './redis/redis';

/**
 * What OpsModule opened, reachable from outside Nest: if app creation fails half-way Nest runs
 * no shutdown hooks, so the creator closes these itself (bootstrap in tests must not leak).
 */
export class OpsResources {
  redis?: IORedis;
  hotQueue?: HotQueue;
  dataSource?: DataSource;

  async close(): Promise<void> {
    await this.hotQueue?.close().catch(() => undefined);
    if (this.redis) await closeRedis(this.redis);
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
}

/**
 * Closes what OpsModule opened, in the last shutdown phase: feature modules stop their workers
 * in onModuleDestroy/beforeApplicationShutdown while the shared connection is still up.
 */
@Injectable()
class OpsLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: IORedis,
    private readonly hotQueue: HotQueue,
    private readonly redisMetrics: RedisMetrics,
  ) {}

  onModuleInit(): void {
    this.redisMetrics.trackQueue(this.hotQueue.queue);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.hotQueue.close().catch(() => undefined);
    await closeRedis(this.redis);
  }
}

/** TypeORM keeps retrying a refused connection briefly (Postgres restarting), then boot fails. */
const DB_CONNECT_ATTEMPTS = 3;
const DB_RETRY_DELAY_MS = 1000;

/**
 * Everything a role needs from the platform, once per process: config, DataSource, logging,
 * the shared Redis connection, metrics, health, clock and the hot queue. Global, so feature
 * modules inject these without importing anything. Only `bootstrapRole` (or a test) imports it.
 */
@Module({})
export class OpsModule {
  static forRoot(options: OpsModuleOptions = {}): DynamicModule {
    const config = options.config ?? loadConfig(options.env ?? process.env);
    const role = options.role ?? 'almanac';
    const resources = options.resources ?? new OpsResources();
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
      ],
      controllers: [HealthController, MetricsController],
      providers: [
        { provide: ALMANAC_CONFIG, useValue: config },
        { provide: REDIS, useFactory: () => (resources.redis = createRedis(config.redisUrl, { commandTimeoutMs: config.redisCommandTimeoutMs })) },
        {
          provide: HotQueue,
          inject: [REDIS],
          useFactory: (redis: IORedis) => (resources.hotQueue = new HotQueue(redis, config.queuePrefix)),
        },
        { provide: Clock, useClass: SystemClock },
        MetricsService,
        RedisMetrics,
        RedisHealthIndicator,
        Liveness,
        OpsLifecycle,
      ],
      exports: [ALMANAC_CONFIG, REDIS, HotQueue, Clock, MetricsService, RedisMetrics, Liveness],
    };
  }
}

function isConnectionRefused(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === '57P03'; // 57P03: the database system is starting up
}
