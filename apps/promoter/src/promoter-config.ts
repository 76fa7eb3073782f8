import type { KeyReservation } from '@almanac/domain';
import { type Env, readSetting } from '@almanac/platform';

/** Feature settings of the promoter role, read and validated once at module init. */
export interface PromoterConfig {
  /** How far ahead rows go into the queue (ALMANAC_HOT_HORIZON_MS, core config). */
  hotHorizonMs: number;
  promotionIntervalMs: number;
  overdueIntervalMs: number;
  recurringIntervalMs: number;
  /** How far ahead the recurring sweep materialises occurrences (at most the hot horizon). */
  recurringHorizonMs: number;
  jobStatesIntervalMs: number;
  /** Tenants with series of their own in per-tenant metrics, by due backlog; the rest are `other`. */
  tenantMetricsTop: number;
  /** Due rows the tenant-backlog sweep reads at most per run (its cost: ~1.5–13 µs a row). */
  tenantMetricsScanRows: number;
  /** A queued row this late past its run time is assumed lost by the queue. */
  overdueGraceMs: number;
  promotionBatchSize: number;
  /** Parallel promotion batches (each its own transaction and addBulk). */
  promotionConcurrency: number;
  /** Upper bound of one promotion runOnce; the runner calls again at once when it is hit. */
  promotionMaxPerRun: number;
  overdueBatchSize: number;
  overdueMaxPerRun: number;
  recurringBatchSize: number;
  recurringConcurrency: number;
  recurringMaxPerRun: number;
  recurringBatchRows: number;
  recurringBatchBytes: number;
  recurringTenantOccurrencesPerRun: number;
  /** `missed: all` materialises at most this many missed occurrences per schedule per catch-up. */
  missedCap: number;
  /** An occurrence materialised less than this after its nominal time still counts as on time. */
  lateToleranceMs: number;
  /** How often open bulk operations are looked for (one that has chunks left runs on at once). */
  bulkIntervalMs: number;
  /** A bulk operation whose filter matches more jobs than this fails, changing nothing. */
  bulkMaxJobs: number;
  /** Chunks (BULK_CHUNK_JOBS jobs each) one bulk sweep run applies at most, over all operations. */
  bulkChunksPerRun: number;
  /** How often finished jobs past retention are looked for (a run that hits its cap runs on at once). */
  retentionIntervalMs: number;
  /** Retention of a tenant that has none of its own (ALMANAC_RETENTION_DEFAULT_SECONDS). */
  retentionDefaultSeconds: number;
  /** Key reservation of a tenant that has none of its own (ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS, or "forever"). */
  keyReservationDefault: KeyReservation;
  retentionBatchSize: number;
  retentionMaxPerRun: number;
  /** Rows per state the due-soon sweep reads at most per run (almanac_jobs_due; ~1.5 µs a row). */
  dueSoonScanRows: number;
  /** How often the stored-bytes sweep takes a step, and the rows a step reads. */
  storedBytesIntervalMs: number;
  storedBytesScanRows: number;
}

const MIN = 60_000;

/** Read and checked as libs/config/src/settings/promoter.ts declares them. */
export function promoterConfigFromEnv(env: Env, hotHorizonMs: number): PromoterConfig {
  const recurringIntervalMs = readSetting(env, 'ALMANAC_RECURRING_INTERVAL_MS');
  return {
    hotHorizonMs,
    promotionIntervalMs: readSetting(env, 'ALMANAC_PROMOTION_INTERVAL_MS'),
    overdueIntervalMs: readSetting(env, 'ALMANAC_OVERDUE_INTERVAL_MS'),
    recurringIntervalMs,
    // An hour ahead, or less when the hot horizon is shorter; never less than 10 minutes.
    recurringHorizonMs: readSetting(env, 'ALMANAC_RECURRING_HORIZON_MS', {
      default: Math.max(10 * MIN, Math.min(60 * MIN, hotHorizonMs)),
      max: Math.max(10 * MIN, hotHorizonMs),
    }),
    jobStatesIntervalMs: readSetting(env, 'ALMANAC_JOB_STATES_INTERVAL_MS'),
    tenantMetricsTop: readSetting(env, 'ALMANAC_TENANT_METRICS_TOP'),
    tenantMetricsScanRows: readSetting(env, 'ALMANAC_TENANT_METRICS_SCAN_ROWS'),
    dueSoonScanRows: readSetting(env, 'ALMANAC_DUE_SOON_SCAN_ROWS'),
    overdueGraceMs: readSetting(env, 'ALMANAC_OVERDUE_GRACE_MS'),
    promotionBatchSize: readSetting(env, 'ALMANAC_PROMOTION_BATCH_SIZE'),
    promotionConcurrency: readSetting(env, 'ALMANAC_PROMOTION_CONCURRENCY'),
    promotionMaxPerRun: readSetting(env, 'ALMANAC_PROMOTION_MAX_PER_RUN'),
    overdueBatchSize: readSetting(env, 'ALMANAC_OVERDUE_BATCH_SIZE'),
    overdueMaxPerRun: readSetting(env, 'ALMANAC_OVERDUE_MAX_PER_RUN'),
    recurringBatchSize: readSetting(env, 'ALMANAC_RECURRING_BATCH_SIZE'),
    recurringConcurrency: readSetting(env, 'ALMANAC_RECURRING_CONCURRENCY'),
    recurringMaxPerRun: readSetting(env, 'ALMANAC_RECURRING_MAX_PER_RUN'),
    recurringBatchRows: readSetting(env, 'ALMANAC_RECURRING_BATCH_ROWS'),
    recurringBatchBytes: readSetting(env, 'ALMANAC_RECURRING_BATCH_BYTES'),
    recurringTenantOccurrencesPerRun: readSetting(env, 'ALMANAC_RECURRING_TENANT_OCCURRENCES_PER_RUN'),
    missedCap: readSetting(env, 'ALMANAC_SCHEDULE_MISSED_CAP'),
    lateToleranceMs: readSetting(env, 'ALMANAC_SCHEDULE_LATE_TOLERANCE_MS', { default: Math.max(5 * MIN, 2 * recurringIntervalMs) }),
    bulkIntervalMs: readSetting(env, 'ALMANAC_BULK_INTERVAL_MS'),
    bulkMaxJobs: readSetting(env, 'ALMANAC_BULK_MAX_JOBS'),
    bulkChunksPerRun: readSetting(env, 'ALMANAC_BULK_CHUNKS_PER_RUN'),
    retentionIntervalMs: readSetting(env, 'ALMANAC_RETENTION_INTERVAL_MS'),
    retentionDefaultSeconds: readSetting(env, 'ALMANAC_RETENTION_DEFAULT_SECONDS'),
    keyReservationDefault: readSetting(env, 'ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS'),
    retentionBatchSize: readSetting(env, 'ALMANAC_RETENTION_BATCH_SIZE'),
    retentionMaxPerRun: readSetting(env, 'ALMANAC_RETENTION_MAX_PER_RUN'),
    storedBytesIntervalMs: readSetting(env, 'ALMANAC_STORED_BYTES_INTERVAL_MS'),
    storedBytesScanRows: readSetting(env, 'ALMANAC_STORED_BYTES_SCAN_ROWS'),
  };
}
