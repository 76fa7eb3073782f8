import {
  DEFAULT_KEY_RESERVATION_SECONDS,
  DEFAULT_RETENTION_SECONDS,
  MAX_MISSED_ALL,
  MAX_RETENTION_SECONDS,
  MIN_KEY_RESERVATION_SECONDS,
  MIN_RETENTION_SECONDS,
} from '@almanac/domain';
import type { Setting } from '../setting';

const PROMOTER = ['promoter'] as const;
const MIN = 60_000;
const DAY = 24 * 3600_000;
/** How often a sweep runs. */
const INTERVAL = { type: 'ms', min: 100, max: DAY, readers: PROMOTER } as const;
/** A cap on one sweep run; the runner calls again at once when it is hit. */
const PER_RUN = { type: 'int', min: 1, readers: PROMOTER } as const;

/** Read by the promoter role only (its sweeps). */
export const PROMOTER_SETTINGS = {
  // At most hourly: AlmanacPromotionSweepNotRunning (k8s/monitoring/rules) pages after 3 h
  // without a successful run; a run that finds nothing is cheap, so nothing needs it slower.
  ALMANAC_PROMOTION_INTERVAL_MS: { ...INTERVAL, default: 60 * MIN, max: 60 * MIN, meaning: 'promotion sweep: cold rows due within the hot horizon (rounded up to the hour) → queue' },
  // Each tenant with its own label adds a lag histogram (17 series) per worker process.
  ALMANAC_TENANT_METRICS_TOP: {
    type: 'int',
    default: 10,
    min: 0,
    max: 100,
    readers: PROMOTER,
    meaning: 'tenants with their own series in per-tenant metrics (backlog, oldest due, lag); the rest are `other`',
  },
  ALMANAC_TENANT_METRICS_SCAN_ROWS: {
    type: 'int',
    default: 100_000,
    min: 1000,
    max: 10_000_000,
    readers: PROMOTER,
    meaning: 'due rows the per-tenant backlog count reads at most (every 15 s)',
  },
  ALMANAC_STORED_BYTES_SCAN_ROWS: {
    type: 'int',
    default: 10_000,
    min: 100,
    max: 1_000_000,
    readers: PROMOTER,
    meaning: 'rows one step of the stored-bytes pass reads (jobs with their attempts, then schedules and stored schedule payloads); at one step a second, 10 M jobs make a pass of about 17 minutes',
  },
  ALMANAC_STORED_BYTES_INTERVAL_MS: { ...INTERVAL, default: 1000, meaning: 'how often the stored-bytes pass takes a step' },
  ALMANAC_DUE_SOON_SCAN_ROWS: {
    type: 'int',
    default: 1_000_000,
    min: 1000,
    max: 100_000_000,
    readers: PROMOTER,
    meaning: 'rows per state the look-ahead (`almanac_jobs_due{pool, within}`, every 15 s) reads at most',
  },
  ALMANAC_OVERDUE_INTERVAL_MS: { ...INTERVAL, default: 30_000, meaning: 'overdue/reconcile sweep; also how far ahead it promotes stragglers' },
  ALMANAC_OVERDUE_GRACE_MS: { type: 'ms', default: 30_000, min: 0, max: DAY, readers: PROMOTER, meaning: 'a queued row this late is re-enqueued' },
  ALMANAC_RECURRING_INTERVAL_MS: { ...INTERVAL, default: MIN, meaning: 'recurring sweep: schedules → job rows' },
  // A schedule's rows exist this far ahead only: a per-minute schedule holds 60 future rows,
  // not the 1,440 a day ahead gave it (each with a copy of its payload).
  ALMANAC_RECURRING_HORIZON_MS: {
    type: 'ms',
    min: 10 * MIN,
    defaultText: '`3600000` (1 h), or the hot horizon when shorter (10 min at least)',
    allowedText: '600000 (10 min) to the hot horizon',
    readers: PROMOTER,
    meaning: "how far ahead a schedule's occurrences exist as rows: a per-minute schedule holds 60",
  },
  ALMANAC_JOB_STATES_INTERVAL_MS: { ...INTERVAL, default: MIN, min: 1000, meaning: 'refresh of the `almanac_jobs{state}` estimate' },
  ALMANAC_PROMOTION_BATCH_SIZE: { type: 'int', default: 5000, min: 1, max: 100_000, readers: PROMOTER, meaning: 'promotion: rows per transaction' },
  ALMANAC_PROMOTION_CONCURRENCY: { type: 'int', default: 2, min: 1, max: 16, readers: PROMOTER, meaning: 'promotion: parallel lanes (each its own transaction and queue write)' },
  ALMANAC_PROMOTION_MAX_PER_RUN: { ...PER_RUN, default: 1_000_000, meaning: 'promotion: rows per run at most' },
  ALMANAC_OVERDUE_BATCH_SIZE: { type: 'int', default: 5000, min: 1, max: 100_000, readers: PROMOTER, meaning: 'overdue sweep: rows per transaction' },
  ALMANAC_OVERDUE_MAX_PER_RUN: { ...PER_RUN, default: 200_000, meaning: 'overdue sweep: rows per run at most' },
  ALMANAC_RECURRING_BATCH_SIZE: { type: 'int', default: 1000, min: 1, max: 50_000, readers: PROMOTER, meaning: 'recurring sweep: schedules per transaction' },
  ALMANAC_RECURRING_CONCURRENCY: { type: 'int', default: 2, min: 1, max: 16, readers: PROMOTER, meaning: 'recurring sweep: parallel lanes' },
  ALMANAC_RECURRING_MAX_PER_RUN: { ...PER_RUN, default: 2_000_000, meaning: 'recurring sweep: occurrences per run at most' },
  // Memory per batch (two lanes in flight): 20,000 rows or 16 MiB of payload, whichever first.
  ALMANAC_RECURRING_BATCH_ROWS: {
    type: 'int',
    default: 20_000,
    min: 1,
    max: 1_000_000,
    readers: PROMOTER,
    meaning: 'occurrences per transaction at most, however many schedules produce them',
  },
  ALMANAC_RECURRING_BATCH_BYTES: {
    type: 'bytes',
    default: 16 * 1024 * 1024,
    min: 1024,
    max: 1024 * 1024 * 1024,
    readers: PROMOTER,
    meaning: 'payload bytes per transaction at most, however many schedules produce them',
  },
  ALMANAC_RECURRING_TENANT_OCCURRENCES_PER_RUN: {
    ...PER_RUN,
    default: 200_000,
    meaning: 'occurrences one tenant may materialise per run; the rest wait for the next run, so one tenant never holds back another',
  },
  ALMANAC_SCHEDULE_MISSED_CAP: {
    type: 'int',
    default: MAX_MISSED_ALL,
    min: 1,
    max: 100_000,
    readers: PROMOTER,
    meaning: '`missed: all` runs at most this many missed occurrences; the rest are counted as skipped',
  },
  ALMANAC_SCHEDULE_LATE_TOLERANCE_MS: {
    type: 'ms',
    min: 0,
    max: DAY,
    defaultText: 'max(300000, 2 × `ALMANAC_RECURRING_INTERVAL_MS`)',
    readers: PROMOTER,
    meaning: 'an occurrence this late still counts as on time, not missed',
  },
  ALMANAC_BULK_INTERVAL_MS: { ...INTERVAL, default: 1000, meaning: 'how often the bulk sweep looks for new operations (one with chunks left runs on at once)' },
  ALMANAC_BULK_MAX_JOBS: {
    type: 'int',
    default: 1_000_000,
    min: 1,
    max: 100_000_000,
    readers: PROMOTER,
    meaning: 'an operation whose filter matches more jobs fails with an error that says so, changing nothing',
  },
  ALMANAC_BULK_CHUNKS_PER_RUN: {
    type: 'int',
    default: 10,
    min: 1,
    max: 10_000,
    readers: PROMOTER,
    meaning: 'chunks of 5,000 jobs one bulk sweep run applies, taking turns between tenants (a turn: one chunk of the oldest operation of the tenant)',
  },
  ALMANAC_RETENTION_DEFAULT_SECONDS: {
    type: 'seconds',
    default: DEFAULT_RETENTION_SECONDS,
    min: MIN_RETENTION_SECONDS,
    max: MAX_RETENTION_SECONDS,
    readers: PROMOTER,
    meaning: 'how long finished jobs (succeeded, dead, cancelled) and their attempts are kept, for tenants without their own `retentionSeconds`',
  },
  ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS: {
    type: 'seconds',
    default: DEFAULT_KEY_RESERVATION_SECONDS,
    min: MIN_KEY_RESERVATION_SECONDS,
    max: MAX_RETENTION_SECONDS,
    words: ['forever'],
    readers: PROMOTER,
    meaning: 'how long the key of a job removed by retention stays reserved, for tenants without their own `keyReservationSeconds`',
  },
  ALMANAC_RETENTION_INTERVAL_MS: { ...INTERVAL, default: MIN, meaning: 'how often the retention sweep looks for expired jobs (a run that hits its cap runs on at once)' },
  // 5,000 rows: one statement of ~0.1-0.2 s (bench/retention.ts prints the longest).
  ALMANAC_RETENTION_BATCH_SIZE: { type: 'int', default: 5000, min: 1, max: 50_000, readers: PROMOTER, meaning: 'retention: rows per statement (one short transaction each)' },
  ALMANAC_RETENTION_MAX_PER_RUN: { ...PER_RUN, default: 200_000, meaning: 'retention: rows per run at most, over all tenants' },
} as const satisfies Record<string, Setting>;
