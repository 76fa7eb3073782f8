import { InvalidRunAtError, describeValue } from './errors';

/**
 * Parses a run time from the API: an RFC 3339 / ISO 8601 extended date-time that MUST carry its
 * zone, `Z` or `±HH:MM` (`2026-11-30T09:00:00Z`, `2026-11-30T10:00:00.250+01:00`). A time without
 * a zone (`2026-11-30T09:00:00`) is rejected rather than guessed: the server's zone is not the
 * client's. Seconds are optional, fractions may have 1..9 digits and are truncated to whole
 * milliseconds (JavaScript's precision). `T`/`Z` may be lower case (RFC 3339 allows it).
 * Calendar-checked: 2026-02-30 and 24:00 are rejected, not rolled over.
 */
const RUN_AT =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** A date-time written without a zone (`2026-11-30T09:00`, what an HTML datetime-local field sends). */
const ZONELESS = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

/**
 * A zoneless date-time read as UTC (the console's datetime-local fields say UTC beside them);
 * any other text is returned as it came, for parseRunAt to accept or to name what is wrong.
 */
export function asUtcIfZoneless(raw: string): string {
  return ZONELESS.test(raw) ? `${raw}Z` : raw;
}

export function parseRunAt(raw: unknown, field = 'runAt'): Date {
  if (typeof raw !== 'string') {
    throw new InvalidRunAtError(field, 'type', `${field} must be an ISO 8601 date-time string, got ${describeValue(raw)}`);
  }
  const m = raw.length <= 64 ? RUN_AT.exec(raw) : null;
  if (!m) {
    const rule = ZONELESS.test(raw) ? 'missing_zone' : 'format';
    const why = rule === 'missing_zone' ? 'must include a UTC offset or Z' : 'must be an ISO 8601 date-time with a UTC offset or Z';
    throw new InvalidRunAtError(field, rule, `${field} ${why} (e.g. 2026-11-30T09:00:00Z), got ${describeValue(raw)}`);
  }
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  const offsetMin = m[8] !== undefined ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
  const offsetOk = m[8] !== undefined || (Number(m[10]) <= 23 && Number(m[11]) <= 59);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59 || !offsetOk) {
    throw new InvalidRunAtError(field, 'out_of_range', `${field} is not a real date-time, got ${describeValue(raw)}`);
  }
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day); // setUTCFullYear, unlike Date.UTC, keeps years 0..99 as given
  wall.setUTCHours(hour, minute, second, ms);
  return new Date(wall.getTime() - offsetMin * 60_000);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return new Date(Date.UTC(2001, month, 0)).getUTCDate();
}
