import { instantOfWall, occurrenceKey, occurrencesBetween, parseRunAt, publicAttemptError } from '@almanac/domain';
import { isJobIdString, JobsRepository, SchedulesRepository, ScheduleRunsRepository, type ScheduleView, type TenantRecord } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { Injectable } from '@nestjs/common';
import { invalid, notFound } from '../http/api-error';
import { Issues, queryInt, queryString, rejectUnknownQuery } from '../http/validation';
import { formatInZone, parseTiming } from './schedule-input';
import type { ScheduleRunDto } from './schedule.dto';

const DAY_MS = 86_400_000;
export const RUNS_PAGE = 100;
export const RUNS_PAGE_MAX = 1000;
const LOCAL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ZONELESS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/**
 * A wall-clock time without a zone (`wall`, the query's `raw`), as epoch ms of that time read as
 * UTC, checked as runAt is (no February 30th, no 24:00, years as written); else an issue.
 */
function wallTime(raw: string, wall: string, field: string, issues: Issues): number | undefined {
  try {
    return parseRunAt(`${wall}Z`, field).getTime();
  } catch {
    issues.add(field, 'out_of_range', `${field} is not a real date${field === 'date' ? '' : '-time'}, got ${JSON.stringify(raw)}`);
    return undefined;
  }
}

/** One occurrence of a schedule, run or not (ScheduleRunDto documents each field). */
export type ScheduleRun = ScheduleRunDto;

/**
 * GET /v1/schedules/:id/runs: each occurrence of the schedule's cron in a window, oldest first,
 * with what became of it. The occurrences are computed from the cron (as the recurring sweep does)
 * and their rows read by key (`schedule:<id>:<nominal>`), so "did the 02:00 Europe/Berlin run
 * happen on 1 December?" is one call with `date=2026-12-01`. Before the cron or zone last changed
 * (timingSince) the current cron would invent runs and hide those that happened, so there the
 * occurrences listed are those that have rows (found by key range), not computed ones.
 */
@Injectable()
export class ScheduleRunsService {
  constructor(
    private readonly schedules: SchedulesRepository,
    private readonly runs: ScheduleRunsRepository,
    private readonly jobs: JobsRepository,
    private readonly clock: Clock,
  ) {}

  async list(tenant: TenantRecord, id: string, query: Record<string, unknown>, over?: AbortSignal): Promise<{ timezone: string; items: ScheduleRun[]; nextCursor: string | null }> {
    const s = isJobIdString(id) ? await this.schedules.findForTenant(tenant.id, id, over) : null;
    if (!s) throw notFound(`schedule ${id}`);
    const issues = new Issues();
    rejectUnknownQuery(query, ['date', 'from', 'to', 'cursor', 'limit'], issues);
    const limit = queryInt(query.limit, 'limit', RUNS_PAGE, 1, RUNS_PAGE_MAX, issues);
    const now = this.clock.now();
    const window = this.window(query, s.timezone, now, issues);
    const cursor = queryString(query.cursor, 'cursor', issues);
    const after = cursor === undefined ? undefined : issues.run(() => parseRunAt(cursor, 'cursor'));
    const timing = parseTiming(s.cron, s.timezone);
    if (!timing.ok) issues.list.push(...timing.issues);
    if (!issues.ok || !window || !timing.ok) throw invalid(issues.list);
    // Nothing before the schedule existed; the window is (from, to], as occurrences are planned,
    // so windows paged as from=T1&to=T2, from=T2&to=T3 list the T2 run once.
    const from = new Date(Math.max(window.from.getTime(), s.createdAt.getTime(), after?.getTime() ?? -Infinity));
    const since = s.timingSince ?? from;
    const before = since > from ? await this.runs.instantsWithRows(tenant.id, s.id, from, since < window.to ? since : window.to, limit + 1, false, over) : [];
    const computedFrom = since > from ? since : from;
    const at = before.concat(occurrencesBetween(timing.value, computedFrom, window.to, limit + 1 - before.length));
    const page = at.slice(0, limit);
    return { timezone: s.timezone, items: await this.describe(tenant.id, s, page, now, over), nextCursor: at.length > limit ? page[page.length - 1].toISOString() : null };
  }

  /**
   * The schedule and its last `count` occurrences due by now, oldest first (the console's strip).
   * The window grows eightfold from a day until it holds `count` (a per-minute cron stops at a day,
   * a daily one at 64), at most 512 days back.
   */
  async recent(tenant: TenantRecord, id: string, count: number, over?: AbortSignal): Promise<{ schedule: ScheduleView; runs: ScheduleRun[] }> {
    const s = isJobIdString(id) ? await this.schedules.findForTenant(tenant.id, id, over) : null;
    if (!s) throw notFound(`schedule ${id}`);
    const timing = parseTiming(s.cron, s.timezone);
    if (!timing.ok) return { schedule: s, runs: [] };
    const now = this.clock.now();
    // Computed after the timing's start only (see list); before it, the rows that exist.
    const since = Math.min(now.getTime(), Math.max(s.createdAt.getTime(), s.timingSince?.getTime() ?? -Infinity));
    let at: Date[] = [];
    for (let days = 1; days <= 512; days *= 8) {
      const from = new Date(Math.max(now.getTime() - days * DAY_MS, since));
      at = occurrencesBetween(timing.value, from, now, days * 1440 + 1);
      if (at.length >= count || from.getTime() === since) break;
    }
    if (at.length < count && s.timingSince !== null) {
      const earlier = await this.runs.instantsWithRows(tenant.id, s.id, s.createdAt, new Date(since), count - at.length, true, over);
      at = earlier.reverse().concat(at);
    }
    return { schedule: s, runs: await this.describe(tenant.id, s, at.slice(-count), now, over) };
  }

  /**
   * `date` (a local day, its midnight included), or `from` / `to` (with a zone, or local to the
   * schedule's); the last day by default. The window returned is (from, to].
   */
  private window(query: Record<string, unknown>, zone: string, now: Date, issues: Issues): { from: Date; to: Date } | null {
    const date = queryString(query.date, 'date', issues);
    const fromRaw = queryString(query.from, 'from', issues);
    const toRaw = queryString(query.to, 'to', issues);
    if (date !== undefined) {
      if (!LOCAL_DATE.test(date) || (fromRaw ?? toRaw) !== undefined) {
        issues.add('date', 'format', 'date must be a day as YYYY-MM-DD (the schedule\'s own zone), without from or to');
        return null;
      }
      const wall = wallTime(date, `${date}T00:00`, 'date', issues);
      // A day holds its midnight run: the exclusive start is the instant before it.
      return wall === undefined ? null : { from: new Date(instantOfWall(zone, wall) - 1), to: new Date(instantOfWall(zone, wall + DAY_MS) - 1) };
    }
    const local = (raw: string, field: string) => {
      if (!ZONELESS.test(raw)) return issues.run(() => parseRunAt(raw, field));
      const wall = wallTime(raw, raw, field, issues);
      return wall === undefined ? undefined : new Date(instantOfWall(zone, wall));
    };
    const to = toRaw === undefined ? now : local(toRaw, 'to');
    const from = fromRaw === undefined ? new Date((to ?? now).getTime() - DAY_MS) : local(fromRaw, 'from');
    if (!from || !to) return null;
    if (from.getTime() > to.getTime()) issues.add('from', 'order', 'from must not be after to');
    return { from, to };
  }

  private async describe(tenantId: number, s: ScheduleView, page: Date[], now: Date, over?: AbortSignal): Promise<ScheduleRun[]> {
    const keys = page.map((d) => occurrenceKey(s.id, d));
    const rows = new Map((await this.runs.rows(keys.map((key) => ({ tenantId, key })), over)).map((r) => [r.key, r]));
    const missing = keys.filter((k, i) => !rows.has(k) && page[i].getTime() <= now.getTime());
    const removed = new Map((await this.jobs.findRetired(tenantId, missing, undefined, over)).map((r) => [r.key, r]));
    return page.map((d, i): ScheduleRun => {
      const base = { at: d.toISOString(), local: formatInZone(d, s.timezone), jobId: null, attempts: 0, startedAt: null, finishedAt: null, lateMs: null, result: null, error: null, errorCode: null };
      const row = rows.get(keys[i]);
      if (row) {
        const error = publicAttemptError(row.lastError);
        return {
          ...base, state: row.state, jobId: row.jobId, attempts: row.attempts,
          startedAt: row.startedAt?.toISOString() ?? null, finishedAt: row.finishedAt?.toISOString() ?? null,
          lateMs: row.startedAt ? row.startedAt.getTime() - d.getTime() : null, result: row.result,
          error: error?.message ?? null, errorCode: error?.code ?? null, reason: null,
        };
      }
      const gone = removed.get(keys[i]);
      if (gone) return { ...base, state: 'removed', reason: `its job ended ${gone.state} and was removed by retention on ${gone.removedOn}` };
      if (d.getTime() > now.getTime()) return { ...base, state: 'upcoming', reason: null };
      return { ...base, state: 'skipped', reason: 'no job was made for it: skipped by the missed-run policy, or the schedule was paused then' };
    });
  }
}
