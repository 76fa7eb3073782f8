import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { KindCatalog, KindRoutes, parsePoolMap } from '@almanac/kinds';
import { KindsRepository, TenantsRepository, WorkersRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, DatabaseClock, DELIVERY_REDIS, Liveness, MetricsService, readSetting, type RedisClient } from '@almanac/platform';
import { Module } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { DispatcherService } from './dispatcher.service';
import { Dispatcher } from './dispatcher';
import { DISPATCHER_LOGGER, HOT_CONSUMER_SETTINGS, HotConsumer, type HotConsumerSettings } from './hot-consumer';
import { PoolObserver } from './pool-observer';

/**
 * Root of the dispatcher role: moves due hints from the hot queue to their pools' ready
 * structures. bootstrapRole adds OpsModule (config, DataSource, Redis, logging, metrics, health,
 * Clock, HotQueue), all global. HotConsumer is the hot queue's @Processor: BullModule creates its
 * Worker. Settings are read at boot; a bad value stops the process with the variable's name.
 */
@Module({
  providers: [
    { provide: DISPATCHER_LOGGER, inject: [PinoLogger], useFactory: (pino: PinoLogger): Logger => pino.logger.child({ component: 'dispatcher' }) },
    // A 200,000-row burst is 200 envelopes, all out of the delayed set together.
    { provide: HOT_CONSUMER_SETTINGS, useFactory: (): HotConsumerSettings => ({ concurrency: readSetting(process.env, 'ALMANAC_DISPATCH_CONCURRENCY') }) },
    { provide: ReadyQueues, inject: [ALMANAC_CONFIG, DELIVERY_REDIS], useFactory: (c: AlmanacConfig, redis: RedisClient) => new ReadyQueues(redis, c.queuePrefix) },
    { provide: DeliveryMetrics, inject: [MetricsService], useFactory: (m: MetricsService) => new DeliveryMetrics(m) },
    { provide: KindRoutes, useFactory: () => new KindRoutes(parsePoolMap(process.env)) },
    Dispatcher,
    // Envelopes are judged by the database's clock, read at every observe: by its own, one 5 s fast handed every job over 5 s early.
    { provide: DatabaseClock, inject: [Clock], useFactory: (clock: Clock) => new DatabaseClock(clock) },
    {
      provide: PoolObserver,
      inject: [KindRoutes, ReadyQueues, DeliveryMetrics, KindsRepository, TenantsRepository, WorkersRepository, DatabaseClock, DISPATCHER_LOGGER, Liveness],
      useFactory: (routes: KindRoutes, ready: ReadyQueues, metrics: DeliveryMetrics, kinds: KindsRepository, tenants: TenantsRepository, workers: WorkersRepository, time: DatabaseClock, logger: Logger, liveness: Liveness) =>
        new PoolObserver({ routes, ready, metrics, workers, tenants, clock: time, time, logger, liveness, catalog: new KindCatalog(kinds, { maxAgeMs: 0, missRefreshMs: 0 }) }),
    },
    KindsRepository, TenantsRepository, WorkersRepository, HotConsumer, DispatcherService,
  ],
})
export class DispatcherModule {}
