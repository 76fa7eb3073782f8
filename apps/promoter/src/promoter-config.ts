import {
  DEFAULT_KEY_RESERVATION_SECONDS,
  DEFAULT_RETENTION_SECONDS,
  type KeyReservation,
  MAX_MISSED_ALL,
  MAX_RETENTION_SECONDS,
  MIN_KEY_RESERVATION_SECONDS,
  MIN_RETENTION_SECONDS,
} from '@almanac/domain';
import { Env, envInt } from '@almanac/platform';

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
const DAY = 24 * 3600_000;

export function promoterConfigFromEnv(env: Env, hotHorizonMs: number): PromoterConfig {
  const recurringIntervalMs = envInt(env, 'ALMANAC_RECURRING_INTERVAL_MS', MIN, { min: 100, max: DAY });
  return {
    hotHorizonMs,
    promotionIntervalMs: envInt(env, 'ALMANAC_PROMOTION_INTERVAL_MS', 60 * MIN, { min: 100, max: DAY }),
    overdueIntervalMs: envInt(env, 'ALMANAC_OVERDUE_INTERVAL_MS', 30_000, { min: 100, max: DAY }),
    recurringIntervalMs,
    // A schedule's rows exist this far ahead only: a per-minute schedule holds 60 future rows,
    // not the 1,440 a day ahead gave it (each with a copy of its payload).
    recurringHorizonMs: envInt(env, 'ALMANAC_RECURRING_HORIZON_MS', Math.max(10 * MIN, Math.min(60 * MIN, hotHorizonMs)), { min: 10 * MIN, max: Math.max(10 * MIN, hotHorizonMs) }),
    jobStatesIntervalMs: envInt(env, 'ALMANAC_JOB_STATES_INTERVAL_MS', MIN, { min: 1000, max: DAY }),
    // Each tenant with its own label adds a lag histogram (17 series) per worker process.
    tenantMetricsTop: envInt(env, 'ALMANAC_TENANT_METRICS_TOP', 10, { min: 0, max: 100 }),
    tenantMetricsScanRows: envInt(env, 'ALMANAC_TENANT_METRICS_SCAN_ROWS', 100_000, { min: 1000, max: 10_000_000 }),
    dueSoonScanRows: envInt(env, 'ALMANAC_DUE_SOON_SCAN_ROWS', 1_000_000, { min: 1000, max: 100_000_000 }),
    overdueGraceMs: envInt(env, 'ALMANAC_OVERDUE_GRACE_MS', 30_000, { min: 0, max: DAY }),
    promotionBatchSize: envInt(env, 'ALMANAC_PROMOTION_BATCH_SIZE', 5000, { min: 1, max: 100_000 }),
    promotionConcurrency: envInt(env, 'ALMANAC_PROMOTION_CONCURRENCY', 2, { min: 1, max: 16 }),
    promotionMaxPerRun: envInt(env, 'ALMANAC_PROMOTION_MAX_PER_RUN', 1_000_000, { min: 1 }),
    overdueBatchSize: envInt(env, 'ALMANAC_OVERDUE_BATCH_SIZE', 5000, { min: 1, max: 100_000 }),
    overdueMaxPerRun: envInt(env, 'ALMANAC_OVERDUE_MAX_PER_RUN', 200_000, { min: 1 }),
    recurringBatchSize: envInt(env, 'ALMANAC_RECURRING_BATCH_SIZE', 1000, { min: 1, max: 50_000 }),
    recurringConcurrency: envInt(env, 'ALMANAC_RECURRING_CONCURRENCY', 2, { min: 1, max: 16 }),
    recurringMaxPerRun: envInt(env, 'ALMANAC_RECURRING_MAX_PER_RUN', 2_000_000, { min: 1 }),
    // Memory per batch (two lanes in flight): 20,000 rows or 16 MiB of payload, whichever first.
    recurringBatchRows: envInt(env, 'ALMANAC_RECURRING_BATCH_ROWS', 20_000, { min: 1, max: 1_000_000 }),
    recurringBatchBytes: envInt(env, 'ALMANAC_RECURRING_BATCH_BYTES', 16 * 1024 * 1024, { min: 1024, max: 1024 * 1024 * 1024 }),
    recurringTenantOccurrencesPerRun: envInt(env, 'ALMANAC_RECURRING_TENANT_OCCURRENCES_PER_RUN', 200_000, { min: 1 }),
    missedCap: envInt(env, 'ALMANAC_SCHEDULE_MISSED_CAP', MAX_MISSED_ALL, { min: 1, max: 100_000 }),
    lateToleranceMs: envInt(env, 'ALMANAC_SCHEDULE_LATE_TOLERANCE_MS', Math.max(5 * MIN, 2 * recurringIntervalMs), {
      min: 0,
      max: DAY,
    }),
    bulkIntervalMs: envInt(env, 'ALMANAC_BULK_INTERVAL_MS', 1000, { min: 100, max: DAY }),
    bulkMaxJobs: envInt(env, 'ALMANAC_BULK_MAX_JOBS', 1_000_000, { min: 1, max: 100_000_000 }),
    bulkChunksPerRun: envInt(env, 'ALMANAC_BULK_CHUNKS_PER_RUN', 10, { min: 1, max: 10_000 }),
    retentionIntervalMs: envInt(env, 'ALMANAC_RETENTION_INTERVAL_MS', MIN, { min: 100, max: DAY }),
    retentionDefaultSeconds: envInt(env, 'ALMANAC_RETENTION_DEFAULT_SECONDS', DEFAULT_RETENTION_SECONDS, {
      min: MIN_RETENTION_SECONDS,
      max: MAX_RETENTION_SECONDS,
    }),
    keyReservationDefault:
      env.ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS === 'forever'
        ? 'forever'
        : envInt(env, 'ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS', DEFAULT_KEY_RESERVATION_SECONDS, { min: MIN_KEY_RESERVATION_SECONDS, max: MAX_RETENTION_SECONDS }),
    // 5,000 rows: one statement of ~0.1-0.2 s (bench/retention.ts prints the longest).
    retentionBatchSize: envInt(env, 'ALMANAC_RETENTION_BATCH_SIZE', 5000, { min: 1, max: 50_000 }),
    retentionMaxPerRun: envInt(env, 'ALMANAC_RETENTION_MAX_PER_RUN', 200_000, { min: 1 }),
    storedBytesIntervalMs: envInt(env, 'ALMANAC_STORED_BYTES_INTERVAL_MS', 1000, { min: 100, max: DAY }),
    storedBytesScanRows: envInt(env, 'ALMANAC_STORED_BYTES_SCAN_ROWS', 10_000, { min: 100, max: 1_000_000 }),
  };
}
