import { DEFAULT_MAX_STEPS, scheduleSetAsideError } from '@almanac/domain';
import { isValueError, runIsolated, SILENT_LOGGER } from '@almanac/platform';
import type { Logger } from 'pino';
import { type DueSchedule, isRetiredKeyError, type OccurrenceRow, type RecurringRepository, type ScheduleAdvance } from '@almanac/persistence';
import type { SweepMetrics } from '../sweeps/sweep-metrics';
import { runBatches } from '../sweeps/batch-loop';
import { notAheadOfDatabase, runningFrom, type Sweep } from '../sweeps/sweep';
import type { BatchBudget, OccurrenceCounts, RecurringOptions, RecurringResult, RunQuota } from './recurring-run';
import type { SchedulePlanner } from './schedule-planner';

/** What an occurrence row costs beyond its payload (key, columns, tuple header), for the byte budget. */
const ROW_OVERHEAD_BYTES = 120;

/**
 * Schedules → job rows for every occurrence inside the horizon (an hour ahead by default). Per batch, one transaction:
 * claim up to `batchSize` schedules with next_run_at ≤ now + horizon (schedules_due, SKIP LOCKED,
 * so replicas split the work), plan their occurrences (SchedulePlanner: missed policy, DST
 * rules, cached parsed crons), insert them with one statement keyed
 * `schedule:<id>:<nominal ISO>` (ON CONFLICT DO NOTHING: materialising twice is a no-op), and
 * advance next_run_at to the first occurrence past the horizon.
 *
 * Rows are inserted **scheduled**, not queued: this sweep never talks to Redis, and the
 * promotion sweep's crash-safe claim → addBulk → commit is the only road into the queue.
 * `onMaterialised` (wired to promotion) runs right after, so new rows do not wait for the
 * hourly promotion; the overdue sweep's lookahead pass is the backstop.
 *
 * Rows that exist are ordinary jobs: the API removes those not started yet when a schedule is
 * paused, or those not due yet when its cron, zone, kind, payload or maxAttempts changes, and
 * sets next_run_at so this sweep makes them again (a new timing's from now on).
 *
 * Bounded by rows and bytes, not by schedules: a batch stops planning once it holds
 * `maxBatchRows` occurrences or `maxBatchBytes` of payload, truncating the schedule it is on (its
 * next_run_at becomes the first occurrence left) and leaving the rest of the batch due, so the
 * next batch goes on. A tenant that reaches `maxPerTenantPerRun` is left out of the rest of the
 * run's claims, so its schedules never hold back another tenant's. (1,500 per-minute schedules
 * with 2 KB payloads once made one batch of 2 million rows: 1.37 GB and `Invalid string length`.)
 */
export class RecurringSweep implements Sweep<RecurringResult> {
  readonly name = 'recurring' as const;

  constructor(
    private readonly repo: RecurringRepository,
    private readonly planner: SchedulePlanner,
    private readonly opts: RecurringOptions,
    private readonly metrics?: SweepMetrics,
    private readonly onMaterialised?: (now: Date) => Promise<unknown>,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  async runOnce(now: Date): Promise<RecurringResult> {
    const at = runningFrom(now);
    // What is late (and dropped under `skip`) goes by the database's clock, by which runs start:
    // a replica running fast by more than the late tolerance dropped runs not due yet.
    const planAt = notAheadOfDatabase(now, (await this.repo.databaseNow()).getTime());
    const total: RecurringResult = {
      schedules: 0,
      inserted: 0,
      duplicates: 0,
      occurrences: { materialised: 0, missed: 0, skipped: 0 },
      invalid: 0,
      tenantsAtQuota: 0,
    };
    // First every due schedule's next few minutes, whatever the quota: a schedule the quota
    // held back whole would see its first occurrences turn late and, under `skip`, dropped.
    // Then the rest of the horizon, within each tenant's quota.
    const near = await this.pass(planAt, new Date(planAt.getTime() + this.opts.nearMs), null, total);
    const quota: RunQuota = { perTenant: new Map(), atQuota: new Set() };
    const far = await this.pass(planAt, new Date(planAt.getTime() + this.opts.horizonMs), quota, total);
    total.schedules = near.total + far.total;
    total.tenantsAtQuota = quota.atQuota.size;
    if (near.more || far.more) total.more = true;
    const { materialised, missed, skipped } = total.occurrences;
    this.metrics?.occurrences.inc({ outcome: 'materialised' }, materialised);
    this.metrics?.occurrences.inc({ outcome: 'missed' }, missed);
    this.metrics?.occurrences.inc({ outcome: 'skipped' }, skipped);
    if (total.inserted > 0) await this.onMaterialised?.(at()); // promoted with delays from now, not from the run's start
    return total;
  }

  /** Batches over schedules due by `until`; `quota` null: no per-tenant quota (the near pass). */
  private pass(now: Date, until: Date, quota: RunQuota | null, total: RecurringResult) {
    return runBatches(this.opts, async (limit) => {
      const batch = (onlyIds: string[] | null) => this.materialise(now, until, limit, quota, total, onlyIds);
      try {
        return await batch(null);
      } catch (err) {
        if (!isValueError(err)) throw err;
        return this.isolate(until, limit, quota, err, batch);
      }
    });
  }

  /**
   * One batch: claims, plans, inserts and advances in one transaction, and adds what it did to
   * `total` once it committed. Returns how many schedules it claimed (the whole limit when its
   * row budget cut it short, so the run goes on; maxPerRun still bounds the run).
   */
  private async materialise(now: Date, until: Date, limit: number, quota: RunQuota | null, total: RecurringResult, onlyIds: string[] | null) {
    const attempt = async (skipRetired: boolean) => {
      const counts = { materialised: 0, missed: 0, skipped: 0, invalid: 0 };
      const budget: BatchBudget = { rows: this.opts.maxBatchRows, bytes: this.opts.maxBatchBytes, steps: DEFAULT_MAX_STEPS, cut: false };
      const batch = await this.repo.materialiseDueSchedules(
        until,
        limit,
        (schedules) => this.plan(schedules, now, until, counts, quota, budget),
        quota ? [...quota.atQuota] : [],
        skipRetired,
        onlyIds,
      );
      return { batch, counts, budget };
    };
    // An occurrence whose key retention retired (a schedule resumed past its old rows'
    // retention) failed the batch of every tenant's schedules, on every run: the batch goes
    // again without such keys. (The failed try's quota use stays counted: rare, and a quota
    // only paces.)
    const { batch, counts, budget } = await attempt(false).catch((err: unknown) => {
      if (!isRetiredKeyError(err)) throw err;
      this.log.warn({ err }, 'an occurrence key was retired by retention; materialising the batch without it');
      return attempt(true);
    });
    total.inserted += batch.inserted;
    total.duplicates += batch.duplicates;
    total.occurrences.materialised += counts.materialised;
    total.occurrences.missed += counts.missed;
    total.occurrences.skipped += counts.skipped;
    total.invalid += counts.invalid;
    return budget.cut ? Math.max(limit, batch.schedules) : batch.schedules;
  }

  /**
   * A batch Postgres refused on a value of one schedule's occurrences failed for every tenant's
   * schedules, on every run. Its schedules go again by tenant, then in halves (runIsolated), down
   * to the one that fails alone, which is set aside: paused, with the reason as its lastError.
   */
  private async isolate(until: Date, limit: number, quota: RunQuota | null, first: unknown, batch: (onlyIds: string[]) => Promise<number>) {
    this.log.warn({ err: first }, 'a batch of schedules was refused on a value; materialising its schedules apart');
    let claimed = 0;
    await runIsolated(await this.repo.dueScheduleIds(until, limit, quota ? [...quota.atQuota] : []), {
      run: async (some) => void (claimed += await batch(some.map((s) => s.id))),
      isValueError,
      groupOf: (s) => s.tenantId,
      setAside: async (s, err) => {
        this.metrics?.setAside.inc({ statement: 'recurring' });
        this.log.error({ err, scheduleId: s.id, tenantId: s.tenantId }, "Postgres refused a value of this schedule's occurrences; paused so the others go on");
        await this.repo.setScheduleAside(s.id, scheduleSetAsideError(String((err as { code?: unknown }).code)));
        claimed++;
      },
    });
    return claimed;
  }

  private plan(
    schedules: DueSchedule[],
    now: Date,
    until: Date,
    counts: OccurrenceCounts & { invalid: number },
    quota: RunQuota | null,
    budget: BatchBudget,
  ): { rows: OccurrenceRow[]; advances: ScheduleAdvance[] } {
    const rows: OccurrenceRow[] = [];
    const advances: ScheduleAdvance[] = [];
    for (const s of schedules) {
      // Its tenant out of quota, or the batch out of budget: not advanced, so it stays due.
      if (quota?.atQuota.has(s.tenantId)) continue;
      if (budget.rows <= 0 || budget.bytes <= 0) {
        budget.cut = true;
        continue;
      }
      const rowBytes = (s.payloadJson?.length ?? 0) + ROW_OVERHEAD_BYTES;
      const tenantLeft = quota ? this.opts.maxPerTenantPerRun - (quota.perTenant.get(s.tenantId) ?? 0) : Number.MAX_SAFE_INTEGER;
      // At least one, so every batch makes progress whatever one schedule's payload weighs.
      const cap = Math.max(1, Math.min(budget.rows, tenantLeft, Math.floor(budget.bytes / rowBytes)));
      // Out of steps (a catch-up, first by next_run_at, took them): maxSteps 0 still plans the
      // schedules that are not behind, so one tenant's catch-up never holds back another's runs.
      const plan = this.planner.plan(s, now, until, cap, Math.max(0, budget.steps));
      if (plan === null) {
        // Unparsable (written before validation tightened?): park it rather than fail the batch.
        counts.invalid += 1;
        this.log.warn({ scheduleId: s.id, tenantId: s.tenantId }, 'schedule cron/timezone does not parse: parked (next_run_at = null)');
        advances.push({ id: s.id, nextRunAt: null });
        continue;
      }
      for (const o of plan.occurrences) {
        rows.push({
          tenantId: s.tenantId,
          key: o.key,
          kind: s.kind,
          runAt: o.runAt,
          payloadJson: s.payloadJson,
          payloadRef: s.payloadRef,
          maxAttempts: s.maxAttempts,
        });
      }
      counts.materialised += plan.onTime;
      counts.missed += plan.missed;
      counts.skipped += plan.skipped;
      advances.push({ id: s.id, nextRunAt: plan.next });
      const n = plan.occurrences.length;
      if (n >= cap && cap < tenantLeft) budget.cut = true; // possibly truncated by the budget
      budget.rows -= n;
      budget.bytes -= n * rowBytes;
      budget.steps -= plan.steps;
      if (budget.steps <= 0) budget.cut = true; // a catch-up stopped short, or a later one would: the run goes on
      if (quota) {
        const used = (quota.perTenant.get(s.tenantId) ?? 0) + n;
        quota.perTenant.set(s.tenantId, used);
        if (used >= this.opts.maxPerTenantPerRun) quota.atQuota.add(s.tenantId);
      }
    }
    return { rows, advances };
  }
}
