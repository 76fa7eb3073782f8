import { InvalidMissedPolicyError, describeValue } from './errors';
import { nextOccurrences, occurrencesBetween, type Schedule } from './schedule';

/**
 * What a schedule does with occurrences that were due while nothing materialised them (the
 * promoter was down longer than the hot horizon, or the schedule was just resumed):
 * - `skip` (default): none of them; continue from now;
 * - `latest`: only the most recent one;
 * - `all`: every one, oldest first, but at most `cap` (default MAX_MISSED_ALL = 1000): the most
 *   recent `cap` run and the older overflow counts as skipped.
 * Nothing is dropped silently: every missed occurrence is either in `toRun` or counted in `skipped`.
 */
export type MissedPolicy = 'skip' | 'latest' | 'all';
export const MISSED_POLICIES: readonly MissedPolicy[] = ['skip', 'latest', 'all'];
export const DEFAULT_MISSED_POLICY: MissedPolicy = 'skip';
export const MAX_MISSED_ALL = 1000;

/** For API input: undefined → the default; anything but the three names → InvalidMissedPolicyError. */
export function parseMissedPolicy(raw: unknown, field = 'missed'): MissedPolicy {
  if (raw === undefined) return DEFAULT_MISSED_POLICY;
  if (typeof raw === 'string' && (MISSED_POLICIES as readonly string[]).includes(raw)) return raw as MissedPolicy;
  throw new InvalidMissedPolicyError(field, 'enum', `${field} must be one of skip, latest, all, got ${describeValue(raw)}`);
}

export interface MissedPlan {
  /** The missed occurrences to run now, ascending. */
  readonly toRun: Date[];
  /** Missed occurrences deliberately not run. */
  readonly skipped: number;
}

export function planMissed(policy: MissedPolicy, missed: readonly Date[], cap: number = MAX_MISSED_ALL): MissedPlan {
  assertCap(cap);
  const sorted = [...missed].sort((a, b) => a.getTime() - b.getTime());
  const keep = Math.min(sorted.length, keepCount(policy, cap));
  return { toRun: sorted.slice(sorted.length - keep), skipped: sorted.length - keep };
}

export interface MaterialisationPlan {
  /** Nominal times to insert as job rows, ascending: chosen missed ones, then every upcoming one. */
  readonly toMaterialise: Date[];
  /** Occurrences found before `now` that had not been materialised. */
  readonly missed: number;
  /** Of those, how many the policy (or the cap) left out. */
  readonly skipped: number;
  /** Pass back next time: every occurrence at or before it has been materialised or counted. */
  readonly nextCursor: Date;
  /** The first occurrence after nextCursor (store as schedules.next_run_at), null if none ever. */
  readonly nextRunAt: Date | null;
  /** Missed occurrences stepped through: at most maxSteps + the kept window (see maxSteps). */
  readonly steps: number;
}

export interface MaterialisationOptions {
  /** Upper bound on upcoming occurrences per call (an every-minute schedule has 1440 a day). */
  readonly maxUpcoming?: number;
  /**
   * Missed occurrences moved past per call (~5 µs a step): past it the call stops short of
   * `now`, materialises nothing, counts what lies before the policy's window as skipped and
   * leaves the window for the next call (nextRunAt at its first), so a per-minute schedule
   * resumed after a year (525,600 steps, 2.5 s) is caught up in slices the sweep's other work
   * and the promoter's other sweeps go between. A call steps up to maxSteps + the window
   * (`all`: the cap), since the window is stepped again next call: bounding the steps alone left
   * a cap at or past maxSteps one occurrence of progress per call. 0: stop at the first missed one.
   */
  readonly maxSteps?: number;
}

export const DEFAULT_MAX_UPCOMING = 10_000;
export const DEFAULT_MAX_STEPS = 20_000;

/**
 * Which occurrences of `schedule` to materialise at `now`.
 *
 * `cursor`: every occurrence at or before it is already handled (materialised or counted as
 * missed); the last materialised nominal time works, as does the previous `nextCursor`. A caller
 * that stores only next_run_at passes `cursorBefore(next_run_at)`. `null` (never materialised)
 * starts from `now`: nothing is missed, an occurrence exactly at `now` is included.
 *
 * Occurrences in (cursor, now) are missed and go through planMissed; occurrences in
 * [now, now + hotHorizonMs] (inclusive, like the tiers) are all materialised. Cost is one cron
 * step per occurrence visited, missed ones included, plus one to find nextRunAt.
 */
export function planMaterialisation(
  schedule: Schedule,
  cursor: Date | null,
  now: Date,
  hotHorizonMs: number,
  policy: MissedPolicy = DEFAULT_MISSED_POLICY,
  cap: number = MAX_MISSED_ALL,
  options: MaterialisationOptions = {},
): MaterialisationPlan {
  assertCap(cap);
  const maxUpcoming = options.maxUpcoming ?? DEFAULT_MAX_UPCOMING;
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  if (!Number.isSafeInteger(maxUpcoming) || maxUpcoming < 1) throw new RangeError(`maxUpcoming must be a positive integer, got ${maxUpcoming}`);
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 0) throw new RangeError(`maxSteps must be a non-negative integer, got ${maxSteps}`);
  if (!Number.isSafeInteger(hotHorizonMs) || hotHorizonMs < 0) throw new RangeError(`hotHorizonMs must be a non-negative integer, got ${hotHorizonMs}`);
  const nowMs = now.getTime();
  const windowEnd = nowMs + hotHorizonMs;
  const start = cursor ?? new Date(nowMs - 1);
  const startMs = start.getTime();
  if (Number.isNaN(nowMs) || Number.isNaN(startMs)) throw new RangeError('cursor and now must be valid dates');

  // Missed ones are streamed through a window of the most recent `keep`, so a long outage costs
  // time but not memory.
  const keep = keepCount(policy, cap);
  // The kept window is stepped again by the next call, so only what lies before it is progress.
  const stopAt = maxSteps === 0 ? 0 : maxSteps + keep;
  const kept: Date[] = [];
  let missed = 0;
  const upcoming: Date[] = [];
  let overshoot: Date | null = null;
  let truncated = false;
  let stoppedAt: Date | null = null;

  schedule.forEachAfter(start, (t) => {
    const ms = t.getTime();
    if (ms > windowEnd) {
      overshoot = t;
      return false;
    }
    if (ms < nowMs) {
      if (missed >= stopAt) {
        stoppedAt = t; // not counted: the next call starts at it, or at the window kept before it
        return false;
      }
      missed++;
      if (keep > 0) {
        kept.push(t);
        // Trim in halves, not one shift per occurrence: O(1) amortised even with a 1000 cap.
        if (kept.length >= 2 * keep) kept.splice(0, kept.length - keep);
      }
      return true;
    }
    if (upcoming.length === maxUpcoming) {
      truncated = true;
      overshoot = t;
      return false;
    }
    upcoming.push(t);
    return true;
  });

  if (kept.length > keep) kept.splice(0, kept.length - keep);
  if (stoppedAt !== null) {
    const resumeAt: Date = kept[0] ?? stoppedAt;
    const handled = missed - kept.length;
    return { toMaterialise: [], missed: handled, skipped: handled, nextCursor: new Date(resumeAt.getTime() - 1), nextRunAt: resumeAt, steps: missed };
  }
  const nextCursor = truncated ? upcoming[upcoming.length - 1] : new Date(Math.max(startMs, windowEnd));
  // With a cursor already past the window the loop stopped at once: overshoot is still the first
  // occurrence after it, which is what nextRunAt means.
  return {
    toMaterialise: kept.concat(upcoming),
    missed,
    skipped: missed - kept.length,
    nextCursor,
    nextRunAt: overshoot,
    steps: missed,
  };
}

/** The cursor implied by a stored next_run_at: everything before it was handled. */
export function cursorBefore(nextRunAt: Date | null): Date | null {
  return nextRunAt === null ? null : new Date(nextRunAt.getTime() - 1);
}

function keepCount(policy: MissedPolicy, cap: number): number {
  switch (policy) {
    case 'skip':
      return 0;
    case 'latest':
      return 1;
    case 'all':
      return cap;
  }
}

function assertCap(cap: number): void {
  if (!Number.isSafeInteger(cap) || cap < 1) throw new RangeError(`cap must be a positive integer, got ${cap}`);
}

const DAY_MS = 86_400_000;

/**
 * The next_run_at a paused schedule resumes with at `now`, given the one it was paused with (the
 * first occurrence not materialised). The occurrences that fell due while it was paused follow
 * `policy` here, not in the sweep, whose late tolerance counts those of the last minutes (up to
 * twice the interval) as on time and would run them at once: `skip` resumes at the first
 * occurrence at or after `now`, `latest` at the last one due (the sweep runs it), `all` where it
 * was (the sweep runs them, capped).
 */
export function resumedNextRunAt(schedule: Schedule, nextRunAt: Date | null, now: Date, policy: MissedPolicy): Date | null {
  if (nextRunAt === null || nextRunAt.getTime() >= now.getTime() || policy === 'all') return nextRunAt;
  const before = new Date(now.getTime() - 1);
  if (policy === 'latest') {
    const latest = lastOccurrenceIn(schedule, new Date(nextRunAt.getTime() - 1), before);
    if (latest !== null) return latest;
  }
  return nextOccurrences(schedule, before, 1)[0] ?? null;
}

/**
 * The last occurrence in (after, until], or null: looked for in windows ending at `until` that grow
 * eightfold from a day, so a per-minute schedule paused for a year costs a day of steps, not a year.
 */
function lastOccurrenceIn(schedule: Schedule, after: Date, until: Date): Date | null {
  for (let span = DAY_MS; ; span *= 8) {
    const from = Math.max(after.getTime(), until.getTime() - span);
    const found = occurrencesBetween(schedule, new Date(from), until, Number.MAX_SAFE_INTEGER);
    if (found.length > 0) return found[found.length - 1];
    if (from === after.getTime()) return null;
  }
}
