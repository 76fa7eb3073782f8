import { Cron, CronPattern } from 'croner';
import { InvalidCronError, describeValue } from './errors';
import { ZoneOffsets, validateTimezone } from './time-zone';

/**
 * Recurring schedules: a 5-field cron expression read in an IANA time zone.
 *
 * Parsing and field matching are croner's (11.x, standard Vixie syntax plus `L`, `W`, `#` and
 * the @daily-style nicknames; day-of-month and day-of-week combine with OR as in Vixie cron).
 * Only 5 fields: occurrences are whole minutes, and per-second schedules would turn a
 * million schedules into a firehose.
 *
 * THE DAYLIGHT-SAVING RULE (one rule, for every expression): a schedule fires at local
 * wall-clock times. Each local time that matches the expression fires exactly once, at the
 * first instant that local time exists; a local time that does not exist is skipped.
 * - Spring forward (Berlin 2026-03-29, 02:00 → 03:00): `30 2 * * *` does not fire that day;
 *   `*\/30 * * * *` goes 01:30, 03:00.
 * - Fall back (Berlin 2026-10-25, 03:00 → 02:00): `30 2 * * *` fires once, at 02:30 CEST
 *   (00:30Z), not again at 02:30 CET; `*\/30 * * * *` covers 02:00 and 02:30 once (CEST) and
 *   resumes at 03:00 CET, so it is quiet for the repeated hour.
 * This is stricter than croner's own Vixie-compatible behaviour (which moves a fixed time out
 * of the gap to 03:00 and runs interval expressions twice through the repeated hour), so the
 * wrapper enforces it: croner enumerates matching wall-clock times in a zone without daylight
 * saving (UTC), and ZoneOffsets maps each to its first real instant, or to none.
 * A side effect worth having: an occurrence's key (its UTC instant) can never be produced twice
 * for one wall-clock time.
 *
 * Parse once and keep the CronSchedule (share it between schedules with the same cron and
 * zone): building one costs ~0.1 ms; a croner step ~10-30 µs, and steps are memoised per instance.
 */
export class CronSchedule {
  /**
   * wall-clock ms → next matching wall-clock ms (null: none). Schedules that share an
   * expression share a CronSchedule in the caller's cache and ask for the same steps (a million
   * hourly schedules all step from the same hours), so most steps skip croner entirely.
   */
  private readonly steps = new Map<number, number | null>();

  private constructor(
    /** The expression as stored: trimmed, single-spaced. */
    readonly cron: string,
    /** Canonical IANA name. */
    readonly timezone: string,
    private readonly wallClock: Cron,
    private readonly zone: ZoneOffsets,
  ) {}

  static parse(cron: unknown, timezone: unknown): CronSchedule {
    const zone = validateTimezone(timezone);
    const expression = normaliseCron(cron);
    let wallClock: Cron;
    try {
      // utcOffset 0: croner matches fields in a zone without DST, i.e. on wall-clock time.
      wallClock = new Cron(expression, { utcOffset: 0, paused: true, mode: '5-part' });
    } catch (e) {
      const why = e instanceof Error ? e.message.replace(/^CronPattern: /, '') : String(e);
      throw new InvalidCronError('cron', 'syntax', `cron is not a valid 5-field cron expression (${why}), got ${describeValue(cron)}`);
    }
    // An expression that never matches is refused without croner's search for its next run, which
    // walks 400 years before it gives up (croner has no option to bound it: maxRuns and stopAt are
    // applied to what the walk finds). parseSchedule, median of 500 warm calls on a 2-core AMD EPYC
    // (performance.now()), each a 400: "0 0 31 2 *" 1.9-2.5 ms before, 0.16-0.26 ms now (accepting
    // "0 9 * * MON-FRI" costs 0.21 ms); "0 0 31 4,6,9,11 *" 5.6-9.2 ms before, 0.17-0.26 ms now;
    // "0 0 1-7 * +MON#5" (AND, never) 75 ms before, 3-5 ms now (the 28-year scan below, its worst case).
    // Only an expression that names days of the month, or uses rules applied day by day, can fail
    // to match (a nickname names none: a plain day of the week or month always comes round).
    const [, , dayOfMonth = '*', ...rest] = expression.split(' ');
    const dayRules = /[LW#+]/i.test(`${dayOfMonth} ${rest.join(' ')}`); // L, W, nth, AND (or a name with L or W in it)
    if (!expression.startsWith('@') && (dayRules || (dayOfMonth !== '*' && dayOfMonth !== '?'))) {
      // The fields as croner reads them (the Cron above parsed the same text the same way).
      const fields = new CronPattern(expression, undefined, { mode: '5-part' });
      const never = noDayOfMonthExists(fields) ? 'no month it names has the day of the month it names'
        : dayRules && !matchesWithin28Years(wallClock, fields) ? 'no day fits its day-of-month, month and day-of-week fields together'
        : null;
      if (never) throw new InvalidCronError('cron', 'never', `cron never matches a date: ${never}, got ${describeValue(cron)}`);
    }
    // The checks above are exact; this is their safety net, quick for a cron that matches (its first
    // match after 1970 is near).
    if (wallClock.nextRun(new Date(0)) === null) {
      throw new InvalidCronError('cron', 'never', `cron never matches a date, got ${describeValue(cron)}`);
    }
    return new CronSchedule(expression, zone, wallClock, ZoneOffsets.for(zone));
  }

  /** Calls `visit` with each occurrence strictly after `after`, in order, until it returns false. */
  forEachAfter(after: Date, visit: (occurrence: Date) => boolean): void {
    const afterMs = after.getTime();
    if (Number.isNaN(afterMs)) throw new RangeError('after must be a valid date');
    // Every local time before wallOf(after) has its first instant before `after`: start there.
    let wall = this.zone.wallOf(afterMs);
    for (;;) {
      const next = this.step(wall);
      if (next === null) return;
      wall = next;
      const t = this.zone.firstInstantOf(next);
      // null: the local time does not exist (gap). t <= after: `after` lies in the second pass
      // of a repeated hour, whose local times already fired in the first pass.
      if (t === null || t <= afterMs) continue;
      if (!visit(new Date(t))) return;
    }
  }

  private step(wall: number): number | null {
    const known = this.steps.get(wall);
    if (known !== undefined) return known;
    const next = this.wallClock.nextRun(new Date(wall))?.getTime() ?? null;
    if (this.steps.size >= STEP_MEMO_SIZE) this.steps.clear();
    this.steps.set(wall, next);
    return next;
  }

  /** True when `instant` is an occurrence of this schedule (under the rule above). */
  isOccurrence(instant: Date): boolean {
    const t = instant.getTime();
    if (Number.isNaN(t) || t % 60_000 !== 0) return false;
    let found = false;
    this.forEachAfter(new Date(t - 1), (occurrence) => {
      found = occurrence.getTime() === t;
      return false;
    });
    return found;
  }
}

/** The stored form of a schedule, parsed and validated once; throws InvalidCronError / InvalidTimezoneError. */
export type Schedule = CronSchedule;

export function parseSchedule(cron: unknown, timezone: unknown): Schedule {
  return CronSchedule.parse(cron, timezone);
}

/** The next `count` occurrences strictly after `after`. Fewer only if the expression runs out (year 9999). */
export function nextOccurrences(schedule: Schedule, after: Date, count: number): Date[] {
  assertCount(count, 'count');
  const out: Date[] = [];
  if (count === 0) return out;
  schedule.forEachAfter(after, (d) => out.push(d) < count);
  return out;
}

/**
 * Occurrences in (fromExclusive, toInclusive], at most `cap` of them, in order. A result of
 * exactly `cap` may be truncated: continue from its last element.
 */
export function occurrencesBetween(schedule: Schedule, fromExclusive: Date, toInclusive: Date, cap: number): Date[] {
  assertCount(cap, 'cap');
  const out: Date[] = [];
  const to = toInclusive.getTime();
  if (cap === 0 || !(to > fromExclusive.getTime())) return out;
  schedule.forEachAfter(fromExclusive, (d) => d.getTime() <= to && out.push(d) < cap);
  return out;
}

/** Days in each month at most (February: 29, in leap years). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * True when the day-of-month field alone decides the day (day-of-week `*`, or ANDed with it by
 * `+`) and no month the expression names has any day it names: Feb 30 or 31, the 31st of
 * April, June, September or November. croner would search 400 years of months for such a date,
 * ~2-6 ms of CPU on the API's event loop for each refusal; this is a lookup over 12 × 31 flags.
 * `L`, `LW` and `W` days are left to croner (a last day always exists; its search finds one at once).
 */
function noDayOfMonthExists(p: CronPattern): boolean {
  if ((!p.starDOW && !p.useAndLogic) || p.lastDayOfMonth || p.lastWeekday || p.nearestWeekdays.some(Boolean)) return false;
  for (let month = 0; month < 12; month++) {
    if (!p.month[month]) continue;
    for (let day = 0; day < MONTH_DAYS[month]; day++) if (p.day[day]) return false;
  }
  return true;
}

/**
 * Whether a day of 2001-2028 matches (`L`, `W`, `#`, `+`: rules croner applies day by day). Whether a
 * day matches depends only on its month, the weekday of the month's 1st and the month's length, and
 * these 28 years (inside 1901-2099, where the calendar repeats every 28 years) hold every such case:
 * each month is checked once per case, at most 14 times, each time on croner's own rules (`match`).
 */
function matchesWithin28Years(wallClock: Cron, p: CronPattern): boolean {
  const hour = p.hour.indexOf(1);
  const minute = p.minute.indexOf(1);
  if (hour < 0 || minute < 0) return true; // not a shape this knows: croner's search decides
  for (let month = 0; month < 12; month++) {
    if (!p.month[month]) continue;
    const seen = new Set<number>();
    for (let year = 2001; year <= 2028; year++) {
      const length = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
      const shape = new Date(Date.UTC(year, month, 1)).getUTCDay() * 32 + length;
      if (seen.has(shape)) continue;
      seen.add(shape);
      for (let day = 1; day <= length; day++) if (wallClock.match(new Date(Date.UTC(year, month, day, hour, minute)))) return true;
    }
  }
  return false;
}

const CRON_MAX_LENGTH = 200;
const STEP_MEMO_SIZE = 4096;

function normaliseCron(raw: unknown): string {
  if (typeof raw !== 'string') {
    throw new InvalidCronError('cron', 'type', `cron must be a string such as "0 9 * * MON-FRI", got ${describeValue(raw)}`);
  }
  const expression = raw.trim().split(/\s+/).join(' ');
  if (expression.length === 0) throw new InvalidCronError('cron', 'empty', 'cron must not be empty');
  if (expression.length > CRON_MAX_LENGTH) {
    throw new InvalidCronError('cron', 'too_long', `cron must be at most ${CRON_MAX_LENGTH} characters`);
  }
  const fields = expression.split(' ').length;
  if (!expression.startsWith('@') && fields !== 5) {
    throw new InvalidCronError(
      'cron',
      'fields',
      `cron must have 5 fields (minute hour day-of-month month day-of-week), got ${fields}: ${describeValue(raw)}`,
    );
  }
  return expression;
}

function assertCount(n: number, name: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
}
