import { type JobState, occurrenceKey, occurrencesBetween, WATCHED_OUTCOMES, type WatchedOutcome, watchedOutcome } from '@almanac/domain';
import type { ScheduleRunsRepository, ScheduleWatchRepository, SweepsRepository, WatchedSchedule } from '@almanac/persistence';
import { OTHER_TENANT, SILENT_LOGGER } from '@almanac/platform';
import type { Logger } from 'pino';
import { notAheadOfDatabase, type Sweep, type SweepResult } from '../sweeps/sweep';
import type { SweepMetrics } from '../sweeps/sweep-metrics';
import { ParsedSchedules } from './parsed-schedules';

/** How often runs are looked at: a missed run is reported at most this long after its expectation passed. */
export const SCHEDULE_WATCH_INTERVAL_MS = 30_000;
/** A schedule held by a running run is looked at again after this (its run may have ended). */
const HELD_LOOK_AGAIN_MS = 2 * SCHEDULE_WATCH_INTERVAL_MS;
/** How long past its expectation a running run holds its schedule's watch; then it counts as started on time. */
const HELD_AT_MOST_MS = 10 * 60_000;

const noOutcomes = (): Record<WatchedOutcome, number> => ({ ok: 0, late: 0, missed: 0, failed: 0 });

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
 * `expectWithinSeconds`, every run whose expectation has passed since the last look (by the
 * database's clock, by which runs start: notAheadOfDatabase) is classified
 * once (watchedOutcome: ok, late, missed, failed) from its row, read by its occurrence key, and
 * counted in `almanac_schedule_runs_total{outcome}`; the schedule keeps its latest outcome
 * (`lastOutcome`) and how far it was looked at. A run that has not ended after an attempt (still
 * running, or waiting for a retry) is not judged yet (it may end dead; a first attempt's start is
 * recorded when it ends): the schedule is watched up to it, and it and the runs after it are
 * judged on a later pass. One replica at a time (a sweep lease; a look whose lease was lost
 * records and counts nothing), so each run is counted once. `almanac_schedules_behind{tenant}` counts, per tenant, the watched
 * schedules whose latest run went wrong; AlmanacScheduleMissed fires on missed runs.
 */
export class ScheduleWatchSweep implements Sweep<ScheduleWatchResult> {
  readonly name = 'schedule_watch' as const;
  /**
   * Schedules held by a running first attempt, left out of the looks until then: held first in
   * line (the oldest watch), a batch's worth of them filled every batch, and no other tenant's
   * schedule was looked at while they ran.
   */
  private readonly heldUntilMs = new Map<string, number>();
  private readonly parsed = new ParsedSchedules();

  constructor(
    private readonly watch: ScheduleWatchRepository,
    private readonly runs: ScheduleRunsRepository,
    private readonly leases: SweepsRepository,
    private readonly opts: ScheduleWatchOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  async runOnce(now: Date): Promise<ScheduleWatchResult> {
    const outcomes = noOutcomes();
    const done = await this.leases.withSweepLease('schedule_watch', async (lost) => {
      for (const [id, untilMs] of this.heldUntilMs) if (untilMs <= now.getTime()) this.heldUntilMs.delete(id);
      // Runs start by the database's clock (job_attempts.started_at): judged by a host running
      // fast, a run about to start on time was found not started, counted missed and passed over.
      const judgeAt = notAheadOfDatabase(now, await this.leases.databaseNowMs());
      const due = await this.watch.due(judgeAt, this.opts.batchSize, [...this.heldUntilMs.keys()]);
      const looks = due.map((s) => this.plan(s, judgeAt));
      // One read of every looked-at run's row and one write of every schedule, for the batch.
      const refs = looks.flatMap((l) => l.runs.map((r) => ({ tenantId: l.tenantId, key: r.key })));
      const rows = new Map<string, { state: JobState; startedAt: Date | null; attempts?: number }>((await this.runs.rows(refs)).map((r) => [`${r.tenantId}|${r.key}`, r]));
      // A run whose row retention already removed (a retention shorter than the expectation) ran:
      // judged by how it ended, not missed; when it started went with the row.
      const gone = await this.runs.retired(refs.filter((r) => !rows.has(`${r.tenantId}|${r.key}`)));
      for (const r of gone) rows.set(`${r.tenantId}|${r.key}`, { state: r.state, startedAt: null, attempts: 1 });
      let held = 0;
      const records = looks.map((l) => {
        const judged = noOutcomes();
        let last: { outcome: WatchedOutcome; dueAt: Date } | null = null;
        let through = l.through;
        for (const run of l.runs) {
          // Held at most HELD_AT_MOST_MS past its expectation: a run hung for hours held back every later run's report (a missed one is what the alert is for).
          const hold = judgeAt.getTime() < run.dueAt.getTime() + l.expectMs + HELD_AT_MOST_MS;
          const outcome = watchedOutcome(rows.get(`${l.tenantId}|${run.key}`) ?? null, run.dueAt, l.expectMs, hold);
          if (outcome === 'running') {
            // Not ended (running, or a retry waits): watched up to just before this run, so it
            // (and those after it) are judged once it ends: ok, late, or failed if it ends dead.
            through = new Date(run.dueAt.getTime() - 1);
            held += 1;
            this.heldUntilMs.set(l.id, now.getTime() + HELD_LOOK_AGAIN_MS);
            break;
          }
          if (outcome === null) continue;
          judged[outcome] += 1;
          last = { outcome, dueAt: run.dueAt };
        }
        return { id: l.id, since: l.since, through, last, judged };
      });
      // The lease lost while looking (a stall past its 15 s): another replica may judge these runs
      // now, so they are neither recorded nor counted here, or each would count twice. A stall
      // that hid the loss (no renewal answered yet) is caught by the record itself: it counts only
      // the schedules it recorded, those still watched from where this look started.
      if (lost.aborted) return null;
      const recorded = await this.watch.record(records);
      for (const r of records) if (recorded.has(r.id)) for (const o of WATCHED_OUTCOMES) outcomes[o] += r.judged[o];
      await this.reportBehind();
      // A full batch of schedules all held by running runs is no reason to look again at once.
      const full = due.length === this.opts.batchSize && held < due.length;
      return { schedules: due.length, more: full || looks.some((l) => l.cut) };
    });
    if (!done) return { skipped: true, schedules: 0, outcomes: noOutcomes() };
    for (const [outcome, n] of Object.entries(outcomes)) if (n > 0) this.metrics?.scheduleRuns.inc({ outcome }, n);
    return { schedules: done.schedules, outcomes, more: done.more };
  }

  /**
   * One schedule's runs due in (since, judgeAt − expectation], at most maxRunsPerSchedule of them,
   * and how far it is then watched through (`cut`: some are left for the next run).
   */
  private plan(s: WatchedSchedule, judgeAt: Date) {
    const expectMs = s.expectWithinSeconds * 1000;
    const until = new Date(judgeAt.getTime() - expectMs);
    const look = { id: s.id, tenantId: s.tenantId, since: s.since, expectMs, through: until, cut: false, runs: [] as { key: string; dueAt: Date }[] };
    // Parsed once per (cron, timezone): each watched schedule is looked at every ~30 s.
    const timing = this.parsed.get(s.cron, s.timezone);
    if (!timing) {
      this.log.warn({ scheduleId: s.id }, 'schedule cron/timezone does not parse: not watched');
      return look;
    }
    const due = occurrencesBetween(timing, s.since, until, this.opts.maxRunsPerSchedule + 1);
    const runs = due.slice(0, this.opts.maxRunsPerSchedule);
    look.runs = runs.map((d) => ({ key: occurrenceKey(s.id, d), dueAt: d }));
    look.cut = due.length > runs.length;
    if (look.cut) look.through = runs[runs.length - 1];
    return look;
  }

  private async reportBehind(): Promise<void> {
    if (!this.metrics) return;
    const behind = await this.watch.behind();
    this.metrics.schedulesBehind.reset();
    behind.slice(0, this.opts.tenantsTop).forEach((t) => this.metrics?.schedulesBehind.set({ tenant: String(t.tenantId) }, t.schedules));
    this.metrics.schedulesBehind.set({ tenant: OTHER_TENANT }, behind.slice(this.opts.tenantsTop).reduce((n, t) => n + t.schedules, 0));
  }
}
