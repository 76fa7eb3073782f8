import { cursorBefore, MISSED_POLICIES, occurrenceKey, planMaterialisation, type MissedPolicy } from '@almanac/domain';
import type { DueSchedule } from '@almanac/persistence';
import { ParsedSchedules } from './parsed-schedules';

export interface PlannedOccurrence {
  key: string;
  runAt: Date;
}

export interface SchedulePlan {
  occurrences: PlannedOccurrence[];
  /** Of `occurrences`, how many were on time (the rest are missed ones the policy runs). */
  onTime: number;
  /** Late occurrences run anyway (policy latest/all). */
  missed: number;
  /** Late occurrences dropped by the policy or the cap. */
  skipped: number;
  /** The schedule's new next_run_at: first occurrence not materialised, null if none ever. */
  next: Date | null;
  /** Missed occurrences stepped through (bounded by `maxSteps`: past it, `next` is still behind). */
  steps: number;
}

export interface SchedulePlannerOptions {
  /** Cap for `missed: all` (per schedule, per catch-up). */
  missedCap: number;
  /**
   * An occurrence at most this late counts as on time (materialised with delay 0), not missed:
   * a schedule created at 10:00:30 whose first run is 10:01 may first be seen by a sweep at
   * 10:01:20, and `skip` must not drop that.
   */
  lateToleranceMs: number;
  /** Parsed (cron, timezone) pairs kept; a million schedules share few distinct expressions. */
  cacheSize?: number;
}

/**
 * Turns a claimed schedule row into the occurrences to insert, through the domain's
 * planMaterialisation (DST rule, missed policy, cap), its cron parsed once (ParsedSchedules).
 */
export class SchedulePlanner {
  private readonly parsed: ParsedSchedules;

  constructor(private readonly opts: SchedulePlannerOptions) {
    this.parsed = new ParsedSchedules(opts.cacheSize);
  }

  /**
   * Null when the stored cron or time zone does not parse (the caller parks the schedule).
   * `maxUpcoming` caps the upcoming occurrences of this pass; `next` is then the first one left,
   * so the schedule stays due and the next batch goes on from there.
   */
  plan(s: DueSchedule, now: Date, until: Date, maxUpcoming?: number, maxSteps?: number): SchedulePlan | null {
    const schedule = this.parsed.get(s.cron, s.timezone);
    if (schedule === null) return null;
    const policy = (MISSED_POLICIES as readonly string[]).includes(s.missed) ? (s.missed as MissedPolicy) : 'skip';
    // Shift "now" back by the tolerance: occurrences in [now - tolerance, now) are upcoming, not missed.
    const lateEdge = new Date(now.getTime() - this.opts.lateToleranceMs);
    const plan = planMaterialisation(
      schedule,
      cursorBefore(s.nextRunAt),
      lateEdge,
      Math.max(0, until.getTime() - lateEdge.getTime()),
      policy,
      this.opts.missedCap,
      { maxUpcoming, maxSteps },
    );
    const runMissed = plan.missed - plan.skipped;
    return {
      occurrences: plan.toMaterialise.map((nominal) => ({ key: occurrenceKey(s.id, nominal), runAt: nominal })),
      onTime: plan.toMaterialise.length - runMissed,
      missed: runMissed,
      skipped: plan.skipped,
      next: plan.nextRunAt,
      steps: plan.steps,
    };
  }
}
