// What a recurring sweep's run is given, what its batches share, and what it reports (RecurringSweep).
import type { SweepResult } from '../sweeps/sweep';

export interface RecurringResult extends SweepResult {
  schedules: number;
  /** Rows inserted (on time + missed-but-run). */
  inserted: number;
  /** Occurrences already materialised before (a crashed run, another replica): untouched. */
  duplicates: number;
  occurrences: OccurrenceCounts;
  /** Schedules whose cron or time zone no longer parses: left alone, logged by the caller. */
  invalid: number;
  /** Tenants that reached their occurrences-per-run quota: their other schedules wait a run. */
  tenantsAtQuota: number;
}

/** materialised = on time; missed = late but run by policy; skipped = late and dropped by policy or cap. */
export interface OccurrenceCounts {
  materialised: number;
  missed: number;
  skipped: number;
}

export interface RecurringOptions {
  /** How far ahead occurrences are materialised (ALMANAC_RECURRING_HORIZON_MS, an hour). */
  horizonMs: number;
  /** Schedules per transaction. */
  batchSize: number;
  /** Schedules per runOnce (the runner calls again at once when hit). */
  maxPerRun: number;
  /** Parallel batch lanes (see runBatches). */
  concurrency: number;
  /** Occurrences inserted per transaction at most, however many schedules produce them. */
  maxBatchRows: number;
  /** Payload bytes inserted per transaction at most (occurrences copy their schedule's payload). */
  maxBatchBytes: number;
  /** Occurrences one tenant may materialise per run; its other schedules wait for the next run. */
  maxPerTenantPerRun: number;
  /**
   * The near part of the horizon every due schedule gets each run, quota or not; at least the
   * late tolerance plus a run interval, so no occurrence turns late while its schedule waits.
   */
  nearMs: number;
}

export interface BatchBudget {
  rows: number;
  bytes: number;
  /** Missed occurrences moved past (planMaterialisation's maxSteps), so a batch's planning stays ~0.1 s. */
  steps: number;
  /** The budget cut the batch short: schedules left due, or one truncated. */
  cut: boolean;
}

/** Per-run state shared by the batches of one runOnce (its lanes run in one event loop). */
export interface RunQuota {
  perTenant: Map<number, number>;
  atQuota: Set<number>;
}
