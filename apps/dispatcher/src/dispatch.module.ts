import { DeliveryMetrics, KindCatalog, KindRoutes, LimitSlots, ReadyLists, WorkerRoster } from '@almanac/delivery';
import { BacklogRepository, KindsRepository, TenantsRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, DELIVERY_REDIS, MetricsService, type RedisClient } from '@almanac/platform';
import { Module } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { DispatchService } from './dispatch.service';
import { Dispatcher } from './dispatcher';
import { DispatcherSettings, dispatcherSettingsFromEnv } from './dispatcher-settings';
import { DISPATCHER_LOGGER, HOT_CONSUMER_SETTINGS, HotConsumer, HotConsumerSettings, MAX_ROOM_WAIT_MS } from './hot-consumer';
import { LimitGate } from './limit-gate';
import { PoolRoom } from './pool-room';
import { TenantShares } from './tenant-shares';

const DISPATCHER_SETTINGS = Symbol('DISPATCHER_SETTINGS');

/** Hot-consumer slots never spent waiting for a busy pool. */
const HOT_SLOTS_RESERVED = 50;

/**
 * Deliveries that may wait in this process for busy pools: a 100,000-job burst's first
 * 50,000 wait in memory (a few hundred bytes each), the rest park in the backlog; when memory
 * is short the tenant with the most waiting parks first.
 */
const MAX_WAITING_DELIVERIES = 50_000;

/**
 * A delivery waits in a line at most this long, then parks: well inside the overdue sweep's
 * default grace (30 s), so a pool that drains slowly but steadily never has the sweep enqueue a
 * second copy of a row that is still waiting here.
 */
const MAX_LINE_WAIT_MS = 10_000;

/**
 * Moves due jobs from the hot queue to their pools' ready lists. Settings are read (and checked)
 * at boot. HotConsumer is the hot queue's @Processor: BullModule (OpsModule) creates its Worker.
 */
@Module({
  providers: [
    { provide: DISPATCHER_SETTINGS, useFactory: () => dispatcherSettingsFromEnv(process.env) },
    {
      provide: DISPATCHER_LOGGER,
      inject: [PinoLogger],
      useFactory: (pino: PinoLogger): Logger => pino.logger.child({ component: 'dispatcher' }),
    },
    {
      provide: Dispatcher,
      inject: [DISPATCHER_SETTINGS, ALMANAC_CONFIG, DELIVERY_REDIS, BacklogRepository, KindsRepository, TenantsRepository, Clock, MetricsService, DISPATCHER_LOGGER],
      useFactory: (
        settings: DispatcherSettings,
        config: AlmanacConfig,
        redis: RedisClient,
        backlog: BacklogRepository,
        kinds: KindsRepository,
        tenants: TenantsRepository,
        clock: Clock,
        metrics: MetricsService,
        logger: Logger,
      ) => {
        const ready = new ReadyLists(redis, config.queuePrefix);
        const roster = new WorkerRoster(redis, config.queuePrefix);
        const shares = new TenantShares(tenants);
        return new Dispatcher({
          shares,
          gate: new LimitGate(new LimitSlots(redis, config.queuePrefix), shares),
          routes: new KindRoutes(settings.poolMap),
          catalog: new KindCatalog(kinds, { maxAgeMs: 0, missRefreshMs: 0 }),
          ready, roster, backlog, clock, logger,
          room: new PoolRoom(roster, ready, settings.prefetch),
          metrics: new DeliveryMetrics(metrics),
          maxRefill: settings.concurrency,
          maxWaiting: MAX_WAITING_DELIVERIES,
          stallMs: MAX_ROOM_WAIT_MS,
          maxWaitMs: MAX_LINE_WAIT_MS,
        });
      },
    },
    {
      provide: HOT_CONSUMER_SETTINGS,
      inject: [DISPATCHER_SETTINGS],
      useFactory: (settings: DispatcherSettings): HotConsumerSettings => ({
        concurrency: settings.concurrency,
        maxWaitingSlots: Math.max(1, settings.concurrency - HOT_SLOTS_RESERVED),
      }),
    },
    BacklogRepository,
    KindsRepository,
    TenantsRepository,
    HotConsumer,
    DispatchService,
  ],
  exports: [DispatchService],
})
export class DispatchModule {}
