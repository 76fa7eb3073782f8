import { ReadyQueues } from '@almanac/delivery';
import { KindCatalog, KindRoutes, parsePoolMap } from '@almanac/kinds';
import { BulkOperationsRepository, DueSoonRepository, KindsRepository, RecurringRepository, RetentionRepository, ScheduleRunsRepository, ScheduleWatchRepository, SweepsRepository, TenantStatsRepository, WorkersRepository } from '@almanac/persistence';
import { ALMANAC_CONFIG, AlmanacConfig, Clock, HotQueue, Liveness, MetricsService, REDIS, type RedisClient, SILENT_LOGGER, TenantLabels, WORKER_RESCUE_INTERVAL_MS } from '@almanac/platform';
import { EPOCH_WATCH_INTERVAL_MS, EpochWatch } from './overdue/epoch-watch';
import { LostHints } from './overdue/lost-hints';
import { BeforeApplicationShutdown, Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { BulkOperationsSweep } from './bulk/bulk-operations.sweep';
import { OverdueSweep } from './overdue/overdue.sweep';
import { RedisEpoch } from './overdue/redis-epoch';
import { PromoterConfig, promoterConfigFromEnv } from './promoter-config';
import { RecurringSweep } from './recurring/recurring.sweep';
import { RescueSweep } from './rescue/rescue.sweep';
import { RetentionSweep } from './retention/retention.sweep';
import { SchedulePlanner } from './recurring/schedule-planner';
import { SCHEDULE_WATCH_INTERVAL_MS, ScheduleWatchSweep } from './recurring/schedule-watch.sweep';
import { JobStatesSweep } from './sweeps/job-states.sweep';
import { PromotionSweep } from './sweeps/promotion.sweep';
import { SweepMetrics } from './sweeps/sweep-metrics';
import { SweepRunner } from './sweeps/sweep-runner';
import { DUE_SOON_INTERVAL_MS, DueSoonSweep } from './sweeps/due-soon.sweep';
import { StoredBytesSweep } from './sweeps/stored-bytes.sweep';
import { TENANT_BACKLOG_INTERVAL_MS, TenantBacklogSweep } from './sweeps/tenant-backlog.sweep';

export const PROMOTER_CONFIG = Symbol('PROMOTER_CONFIG');

/** Builds every sweep from the platform's shared pieces; one function so tests wire the same way. */
export function buildSweeps(deps: {
  config: PromoterConfig;
  dataSource: DataSource;
  queue: HotQueue;
  redis: RedisClient;
  prefix: string;
  /** ALMANAC_POOLS: kind → pool, for the overdue sweep's look at the pools (default: none). */
  poolMap?: ReadonlyMap<string, string>;
  metrics?: SweepMetrics;
  /** The role's logger; each sweep logs through a child with its `component`. */
  logger?: Logger;
}) {
  const log = (component: string) => (deps.logger ?? SILENT_LOGGER).child({ component });
  const { config, metrics } = deps;
  const repo = new SweepsRepository(deps.dataSource);
  const promotion = new PromotionSweep(
    repo,
    deps.queue,
    {
      hotHorizonMs: config.hotHorizonMs,
      batchSize: config.promotionBatchSize,
      maxPerRun: config.promotionMaxPerRun,
      concurrency: config.promotionConcurrency,
    },
    metrics,
    {},
    log('promotion'),
  );
  const recurring = new RecurringSweep(
    new RecurringRepository(deps.dataSource),
    new SchedulePlanner({ missedCap: config.missedCap, lateToleranceMs: config.lateToleranceMs }),
    {
      horizonMs: config.recurringHorizonMs,
      batchSize: config.recurringBatchSize,
      maxPerRun: config.recurringMaxPerRun,
      concurrency: config.recurringConcurrency,
      maxBatchRows: config.recurringBatchRows,
      maxBatchBytes: config.recurringBatchBytes,
      maxPerTenantPerRun: config.recurringTenantOccurrencesPerRun,
      nearMs: config.lateToleranceMs + config.recurringIntervalMs,
    },
    metrics,
    (now) => promotion.runOnce(now),
    log('recurring-sweep'),
  );
  const ready = new ReadyQueues(deps.redis, deps.prefix);
  const catalog = new KindCatalog(new KindsRepository(deps.dataSource), { maxAgeMs: 0, missRefreshMs: 0 });
  // Beside the hot queue (its BullMQ prefix, hash-tagged on a cluster): a node that loses the queue loses the epoch too.
  const epoch = new RedisEpoch(deps.redis, deps.queue.prefix);
  const overdue = new OverdueSweep(
    repo,
    deps.queue,
    new LostHints(new KindRoutes(deps.poolMap ?? new Map()), catalog, ready),
    epoch,
    promotion,
    {
      graceMs: config.overdueGraceMs,
      lookaheadMs: config.overdueIntervalMs,
      batchSize: config.overdueBatchSize,
      maxPerRun: config.overdueMaxPerRun,
    },
    metrics,
    log('overdue-sweep'),
  );
  const jobStates = new JobStatesSweep(repo, metrics);
  const dueSoon = new DueSoonSweep(new DueSoonRepository(deps.dataSource), config.dueSoonScanRows, metrics);
  const tenantStats = new TenantStatsRepository(deps.dataSource);
  const tenantBacklog = new TenantBacklogSweep(
    tenantStats,
    (ids) => TenantLabels.publish(deps.redis, deps.prefix, ids),
    { top: config.tenantMetricsTop, scanRows: config.tenantMetricsScanRows },
    metrics,
  );
  const bulk = new BulkOperationsSweep(
    new BulkOperationsRepository(deps.dataSource),
    deps.queue,
    { hotHorizonMs: config.hotHorizonMs, maxJobs: config.bulkMaxJobs, chunksPerRun: config.bulkChunksPerRun },
    metrics,
    log('bulk-operations'),
  );
  const retention = new RetentionSweep(
    new RetentionRepository(deps.dataSource),
    {
      defaultSeconds: config.retentionDefaultSeconds,
      defaultKeyReservation: config.keyReservationDefault,
      batchSize: config.retentionBatchSize,
      maxPerRun: config.retentionMaxPerRun,
    },
    metrics,
    log('retention'),
  );
  const storedBytes = new StoredBytesSweep(tenantStats, { rowsPerRun: config.storedBytesScanRows, top: config.tenantMetricsTop }, metrics);
  const rescue = new RescueSweep(new WorkersRepository(deps.dataSource), repo, ready, deps.queue, { batchSize: config.overdueBatchSize }, metrics, log('rescue'));
  const epochWatch = new EpochWatch(epoch, overdue);
  const scheduleWatch = new ScheduleWatchSweep(
    new ScheduleWatchRepository(deps.dataSource),
    new ScheduleRunsRepository(deps.dataSource),
    repo,
    { batchSize: 500, maxRunsPerSchedule: 100, tenantsTop: config.tenantMetricsTop },
    metrics,
    log('schedule-watch'),
  );
  return { repo, promotion, recurring, overdue, epochWatch, scheduleWatch, rescue, jobStates, tenantBacklog, bulk, retention, dueSoon, storedBytes };
}

/** Starts the sweeps when the app is up; stops them (waiting for runs in flight) before the shared connections close. */
@Injectable()
class SweepsLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(private readonly runner: SweepRunner) {}

  onApplicationBootstrap(): void {
    this.runner.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.runner.stop();
  }
}

@Module({
  providers: [
    {
      provide: PROMOTER_CONFIG,
      inject: [ALMANAC_CONFIG],
      useFactory: (core: AlmanacConfig) => promoterConfigFromEnv(process.env, core.horizons.hotMs),
    },
    {
      provide: SweepRunner,
      inject: [PROMOTER_CONFIG, ALMANAC_CONFIG, DataSource, HotQueue, REDIS, MetricsService, Clock, Liveness, PinoLogger],
      useFactory: (
        config: PromoterConfig,
        core: AlmanacConfig,
        dataSource: DataSource,
        queue: HotQueue,
        redis: RedisClient,
        metricsService: MetricsService,
        clock: Clock,
        liveness: Liveness,
        pino: PinoLogger,
      ) => {
        const metrics = new SweepMetrics(metricsService);
        const s = buildSweeps({ config, dataSource, queue, redis, prefix: core.queuePrefix, poolMap: parsePoolMap(process.env), metrics, logger: pino.logger });
        return new SweepRunner(
          [
            { sweep: s.overdue, intervalMs: config.overdueIntervalMs },
            { sweep: s.epochWatch, intervalMs: EPOCH_WATCH_INTERVAL_MS },
            { sweep: s.rescue, intervalMs: WORKER_RESCUE_INTERVAL_MS },
            { sweep: s.promotion, intervalMs: config.promotionIntervalMs },
            { sweep: s.recurring, intervalMs: config.recurringIntervalMs },
            { sweep: s.scheduleWatch, intervalMs: SCHEDULE_WATCH_INTERVAL_MS },
            { sweep: s.jobStates, intervalMs: config.jobStatesIntervalMs },
            { sweep: s.tenantBacklog, intervalMs: TENANT_BACKLOG_INTERVAL_MS },
            { sweep: s.bulk, intervalMs: config.bulkIntervalMs },
            { sweep: s.retention, intervalMs: config.retentionIntervalMs },
            { sweep: s.dueSoon, intervalMs: DUE_SOON_INTERVAL_MS },
            { sweep: s.storedBytes, intervalMs: config.storedBytesIntervalMs },
          ],
          clock,
          metrics,
          liveness,
          pino.logger.child({ component: 'sweep-runner' }),
        );
      },
    },
    SweepsLifecycle,
  ],
  exports: [SweepRunner],
})
export class PromoterSweepsModule {}
