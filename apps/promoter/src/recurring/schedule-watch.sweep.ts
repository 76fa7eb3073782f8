import { occurrenceKey, occurrencesBetween, parseSchedule, type WatchedOutcome, watchedOutcome } from '@almanac/domain';
import type { ScheduleRunsRepository, ScheduleWatchRepository, SweepsRepository } from '@almanac/persistence';
import { OTHER_TENANT, SILENT_LOGGER } from '@almanac/platform';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Sweep, SweepResult } from '../sweeps/sweep';
import type { SweepMetrics } from '../sweeps/sweep-metrics';

/** How often runs are looked at: a missed run is reported at most this long after its expectation passed. */
export const SCHEDULE_WATCH_INTERVAL_MS = 30_000;

export interface ScheduleWatchResult extends SweepResult {
  schedules: number;
  outcomes: Record<WatchedOutcome, number>;
}

export interface ScheduleWatchOptions {
  /** Schedules looked at per run. */
  batchSize: number;
  /** Runs of one schedule classified per run at most (the rest on the next). */
  maxRunsPerSchedule: number;
  /** Tenants with their own label on almanac_schedules_behind (the rest: "other"). */
  tenantsTop: number;
}

/**
 * Missed and late schedule runs as signals (issue 34): for each schedule with
 * `expectWithinSeconds`, every run whose expectation has passed since the last look is classified
 * once (watchedOutcome: ok, late, missed, failed) from its row, read by its occurrence key, and
 * counted in `almanac_schedule_runs_total{outcome}`; the schedule keeps its latest outcome
 * (`lastOutcome`) and how far it was looked at. One replica at a time (a sweep lease), so each
 * run is counted once. `almanac_schedules_behind{tenant}` counts, per tenant, the watched
 * schedules whose latest run went wrong; AlmanacScheduleMissed fires on missed runs.
 */
export class ScheduleWatchSweep implements Sweep<ScheduleWatchResult> {
  readonly name = 'schedule_watch' as const;
  private readonly holder = `${hostname()}:${process.pid}`;

  constructor(
    private readonly watch: ScheduleWatchRepository,
    private readonly runs: ScheduleRunsRepository,
    private readonly leases: SweepsRepository,
    private readonly opts: ScheduleWatchOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  async runOnce(now: Date): Promise<ScheduleWatchResult> {
    const outcomes: Record<WatchedOutcome, number> = { ok: 0, late: 0, missed: 0, failed: 0 };
    const done = await this.leases.withSweepLease('schedule_watch', this.holder, async () => {
      const due = await this.watch.due(now, this.opts.batchSize);
      let more = due.length === this.opts.batchSize;
      for (const s of due) more = (await this.look(s, now, outcomes)) || more;
      await this.reportBehind();
      return { schedules: due.length, more };
    });
    if (!done) return { skipped: true, schedules: 0, outcomes };
    for (const [outcome, n] of Object.entries(outcomes)) if (n > 0) this.metrics?.scheduleRuns.inc({ outcome }, n);
    return { schedules: done.schedules, outcomes, more: done.more };
  }

  /** Classifies one schedule's runs due in (since, now − expectation]; true when some are left for the next run. */
  private async look(s: Awaited<ReturnType<ScheduleWatchRepository['due']>>[number], now: Date, outcomes: Record<WatchedOutcome, number>): Promise<boolean> {
    const expectMs = s.expectWithinSeconds * 1000;
    const until = new Date(now.getTime() - expectMs);
    let timing;
    try {
      timing = parseSchedule(s.cron, s.timezone);
    } catch (err) {
      this.log.warn({ err, scheduleId: s.id }, 'schedule cron/timezone does not parse: not watched');
      await this.watch.record(s.id, until, null);
      return false;
    }
    const due = occurrencesBetween(timing, s.since, until, this.opts.maxRunsPerSchedule + 1);
    const looked = due.slice(0, this.opts.maxRunsPerSchedule);
    const keys = looked.map((d) => occurrenceKey(s.id, d));
    const rows = new Map((await this.runs.rows(s.tenantId, keys)).map((r) => [r.key, r]));
    let last: { outcome: WatchedOutcome; dueAt: Date } | null = null;
    looked.forEach((d, i) => {
      const outcome = watchedOutcome(rows.get(keys[i]) ?? null, d, expectMs);
      if (outcome === null) return;
      outcomes[outcome] += 1;
      last = { outcome, dueAt: d };
    });
    const cut = due.length > looked.length;
    await this.watch.record(s.id, cut ? looked[looked.length - 1] : until, last);
    return cut;
  }

  private async reportBehind(): Promise<void> {
    if (!this.metrics) return;
    const behind = await this.watch.behind();
    this.metrics.schedulesBehind.reset();
    behind.slice(0, this.opts.tenantsTop).forEach((t) => this.metrics?.schedulesBehind.set({ tenant: String(t.tenantId) }, t.schedules));
    this.metrics.schedulesBehind.set({ tenant: OTHER_TENANT }, behind.slice(this.opts.tenantsTop).reduce((n, t) => n + t.schedules, 0));
  }
}
