import { BULK_ACTIONS, DUE_WINDOWS, type DueWindowLabel, KEY_POLICIES, WATCHED_OUTCOMES } from '@almanac/domain';
import { type MetricsService, OTHER_TENANT, setAsideCounter } from '@almanac/platform';
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { JobStateCounts } from '@almanac/persistence';
import { SWEEP_NAMES } from './sweep';

export const REQUEUE_REASONS = ['overdue', 'worker_lost', 'redis_lost', 'scheduled_due'] as const;
export type RequeueReason = (typeof REQUEUE_REASONS)[number];
export const OCCURRENCE_OUTCOMES = ['materialised', 'missed', 'skipped'] as const;

/** The promoter's metrics, registered once per process through the platform's get-or-create. */
export class SweepMetrics {
  readonly runs: Counter<'sweep' | 'outcome'>;
  readonly duration: Histogram<'sweep'>;
  readonly promoted: Counter;
  readonly requeued: Counter<'reason'>;
  readonly occurrences: Counter<'outcome'>;
  readonly leaseDead: Counter;
  readonly jobs: Gauge<'state'>;
  readonly tenantBacklog: Gauge<'tenant'>;
  readonly tenantOldestDue: Gauge<'tenant'>;
  readonly bulkJobs: Counter<'action' | 'outcome'>;
  /** Items the promoter's sweeps set aside (statement = promotion, retention, recurring, bulk_match, bulk_apply). */
  readonly setAside: Counter<'statement'>;
  readonly retentionRemoved: Counter<'keys'>;
  readonly reservedKeysExpired: Counter;
  readonly retentionBehind: Gauge;
  readonly jobsDue: Gauge<'pool' | 'within'>;
  /** Watched schedule runs by outcome (the schedule watch: ok, late, missed, failed). */
  readonly scheduleRuns: Counter<'outcome'>;
  readonly schedulesBehind: Gauge<'tenant'>;
  readonly tenantStoredBytes: Gauge<'tenant'>;

  constructor(metrics: MetricsService) {
    this.setAside = setAsideCounter(metrics);
    this.scheduleRuns = metrics.counter({
      name: 'almanac_schedule_runs_total',
      help: 'Runs of schedules with expectWithinSeconds, looked at once that time passed: ok (started within it), late (started after), missed (not started by then, or no job made), failed (dead)',
      labelNames: ['outcome'],
    });
    this.schedulesBehind = metrics.gauge({
      name: 'almanac_schedules_behind',
      help: 'Watched schedules whose latest run was late, missed or failed, per tenant: the top N, the rest summed as "other"',
      labelNames: ['tenant'],
    });
    this.runs = metrics.counter({
      name: 'almanac_sweep_runs_total',
      help: 'Sweep runs by sweep and outcome (ok, error, skipped = another replica held the lock)',
      labelNames: ['sweep', 'outcome'],
    });
    this.duration = metrics.histogram({
      name: 'almanac_sweep_duration_seconds',
      help: 'Wall time of one sweep runOnce',
      labelNames: ['sweep'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    });
    this.promoted = metrics.counter({
      name: 'almanac_promoted_total',
      help: 'Cold rows moved into the hot queue (promotion sweep and the overdue sweep catching late ones)',
    });
    this.requeued = metrics.counter({
      name: 'almanac_overdue_requeued_total',
      help: 'Rows put (back) into the hot queue by the overdue and rescue sweeps, by reason (overdue: a lost hint; worker_lost: its worker died; redis_lost; scheduled_due: a cold row found due)',
      labelNames: ['reason'],
    });
    this.occurrences = metrics.counter({
      name: 'almanac_schedule_occurrences_total',
      help: 'Schedule occurrences: materialised on time, missed (late, still run by policy), skipped (late, dropped by policy or cap)',
      labelNames: ['outcome'],
    });
    this.leaseDead = metrics.counter({
      name: 'almanac_lease_expired_dead_total',
      help: 'Running rows whose worker was lost (its heartbeat stopped, or the lease ran out) on their last attempt (moved to dead)',
    });
    this.jobs = metrics.gauge({
      name: 'almanac_jobs',
      help: 'Rows per state: exact for queued/running up to 100,000 each, planner estimate for the rest and past that (see SweepsRepository.estimateJobStates)',
      labelNames: ['state'],
    });
    this.tenantBacklog = metrics.gauge({
      name: 'almanac_tenant_backlog',
      help: 'Due queued jobs per tenant: the top N by this count, the rest summed as "other" (see the tenant-backlog sweep)',
      labelNames: ['tenant'],
    });
    this.tenantOldestDue = metrics.gauge({
      name: 'almanac_tenant_oldest_due_seconds',
      help: 'Age of the oldest due queued job per tenant: the top N by backlog, the oldest of the rest as "other"',
      labelNames: ['tenant'],
    });
    this.bulkJobs = metrics.counter({
      name: 'almanac_bulk_jobs_total',
      help: 'Jobs matched by bulk operations, by action and outcome (changed; skipped = started or finished before their chunk ran)',
      labelNames: ['action', 'outcome'],
    });
    this.retentionRemoved = metrics.counter({
      name: 'almanac_retention_removed_total',
      help: 'Finished jobs removed by retention, by what became of their keys (reserved or freed)',
      labelNames: ['keys'],
    });
    this.reservedKeysExpired = metrics.counter({
      name: 'almanac_reserved_keys_expired_total',
      help: "Reserved keys of removed jobs freed because their tenant's reservation ended",
    });
    this.retentionBehind = metrics.gauge({
      name: 'almanac_retention_behind_seconds',
      help: 'How far retention is behind: from the run time of the oldest expired job it has not reached yet to its cutoff (0: caught up)',
    });
    this.jobsDue = metrics.gauge({
      name: 'almanac_jobs_due',
      help: 'Unfinished jobs per pool coming due within the window (1m, 5m, 10m, 15m, 1h), cold rows included: what autoscaling plans for (see the due-soon sweep)',
      labelNames: ['pool', 'within'],
    });
    this.tenantStoredBytes = metrics.gauge({
      name: 'almanac_tenant_stored_bytes',
      help: "Bytes a tenant stores (payloads, results, errors, schedule payloads) as of the stored-bytes sweep's last pass: the top N, the rest summed as \"other\"",
      labelNames: ['tenant'],
    });
    this.zero();
  }

  /**
   * Every known series at zero from the start, so a fresh pod's /metrics shows 0, not "no data",
   * and an alert on `increase()` sees the first event after a start (it needs a sample before it).
   */
  private zero(): void {
    for (const sweep of SWEEP_NAMES) {
      for (const outcome of ['ok', 'error', 'skipped']) this.runs.inc({ sweep, outcome }, 0);
    }
    for (const reason of REQUEUE_REASONS) this.requeued.inc({ reason }, 0);
    for (const outcome of OCCURRENCE_OUTCOMES) this.occurrences.inc({ outcome }, 0);
    for (const outcome of WATCHED_OUTCOMES) this.scheduleRuns.inc({ outcome }, 0);
    for (const action of BULK_ACTIONS) for (const outcome of ['changed', 'skipped']) this.bulkJobs.inc({ action, outcome }, 0);
    this.promoted.inc(0);
    this.leaseDead.inc(0);
    for (const keys of KEY_POLICIES) this.retentionRemoved.inc({ keys }, 0);
    this.retentionBehind.set(0);
    this.setTenantBacklog([{ tenant: OTHER_TENANT, backlog: 0, oldestDueSeconds: 0 }]);
    this.setJobsDue(new Map());
    this.tenantStoredBytes.set({ tenant: OTHER_TENANT }, 0);
  }

  /** Replaces every tenant's stored-bytes series at once. */
  setTenantStoredBytes(top: readonly { tenantId: number; storedBytes: number }[], otherBytes: number): void {
    this.tenantStoredBytes.reset();
    for (const t of top) this.tenantStoredBytes.set({ tenant: String(t.tenantId) }, t.storedBytes);
    this.tenantStoredBytes.set({ tenant: OTHER_TENANT }, otherBytes);
  }

  /** Replaces every tenant series at once: a tenant that left the top N loses its series. */
  setTenantBacklog(rows: readonly { tenant: string; backlog: number; oldestDueSeconds: number }[]): void {
    this.tenantBacklog.reset();
    this.tenantOldestDue.reset();
    for (const r of rows) {
      this.tenantBacklog.set({ tenant: r.tenant }, r.backlog);
      this.tenantOldestDue.set({ tenant: r.tenant }, r.oldestDueSeconds);
    }
  }

  /**
   * Replaces every pool's due-soon series at once. A pool with nothing due keeps its series at 0
   * (`default` always has one), so a scaling query never sees "no data" for an idle pool.
   */
  setJobsDue(byPool: ReadonlyMap<string, Record<DueWindowLabel, number>>): void {
    this.jobsDue.reset();
    const pools = new Set(['default', ...byPool.keys()]);
    for (const pool of pools) {
      for (const w of DUE_WINDOWS) this.jobsDue.set({ pool, within: w.label }, byPool.get(pool)?.[w.label] ?? 0);
    }
  }

  setJobStates(counts: JobStateCounts): void {
    for (const [state, n] of Object.entries(counts)) this.jobs.set({ state }, n);
  }
}
