import { DomainValidationError, parseSchedule, type Schedule } from '@almanac/domain';

/**
 * Parsed (cron, timezone) pairs, for the sweeps that read schedules by the thousand (recurring,
 * schedule watch). Parsing a cron costs ~0.1–1.2 ms (`0 0 29 2 +MON` the most), and a million
 * schedules share few distinct expressions: at a million hourly schedules the cache is the
 * difference between seconds and minutes per pass.
 */
export class ParsedSchedules {
  private readonly cache = new Map<string, Schedule | null>();

  constructor(private readonly size = 10_000) {}

  /** Null when the stored cron or time zone does not parse (the caller parks or skips the schedule). */
  get(cron: string, timezone: string): Schedule | null {
    const key = `${timezone}\u0000${cron}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    let parsed: Schedule | null;
    try {
      parsed = parseSchedule(cron, timezone);
    } catch (err) {
      if (!(err instanceof DomainValidationError)) throw err;
      parsed = null;
    }
    if (this.cache.size >= this.size) this.cache.clear();
    this.cache.set(key, parsed);
    return parsed;
  }
}
