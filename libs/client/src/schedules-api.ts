import type { OccurrencePreview, Schedule, ScheduleListQuery, SchedulePage, ScheduleRun, ScheduleRunPage, ScheduleRunsQuery } from './api-types';
import { idPath } from './errors';
import type { CreateScheduleRequest, UpdateScheduleRequest } from './kind-payloads';
import { eachItem } from './pages';
import { type CallOptions, createdByCall, type Transport } from './transport';

/** A create's answer: the schedule, and whether this call made it (as CreatedJob's `created`: null when it cannot tell). */
export interface CreatedSchedule {
  created: boolean | null;
  schedule: Schedule;
}

const path = (id: string) => idPath('schedules', 'schedule', id);

/** /v1/schedules: recurring jobs by cron, in an IANA time zone. */
export class SchedulesApi<P extends object> {
  constructor(private readonly http: Transport) {}

  /** Idempotent by key, as job creates are. */
  async create(schedule: CreateScheduleRequest<P>, options?: CallOptions): Promise<CreatedSchedule> {
    const res = await this.http.request<Schedule>({ method: 'POST', path: '/v1/schedules', body: schedule, idempotent: true, ...options });
    return { created: createdByCall(res), schedule: res.body };
  }

  /** One page, by key; pass `nextCursor` back as `cursor`, or use iterate(). */
  async list(query: ScheduleListQuery = {}, options?: CallOptions): Promise<SchedulePage> {
    return (await this.http.request<SchedulePage>({ method: 'GET', path: '/v1/schedules', query, idempotent: true, ...options })).body;
  }

  /** Every schedule, page by page. */
  iterate(query: Omit<ScheduleListQuery, 'cursor'> = {}, options?: CallOptions): AsyncGenerator<Schedule, void, undefined> {
    return eachItem(async (cursor) => {
      const page = await this.list({ ...query, cursor }, options);
      return { items: page.items, next: page.nextCursor };
    });
  }

  async get(id: string, options?: CallOptions): Promise<Schedule> {
    return (await this.http.request<Schedule>({ method: 'GET', path: path(id), idempotent: true, ...options })).body;
  }

  /** The next `count` run times (default 10), in UTC and in the schedule's zone. */
  async nextRuns(id: string, count?: number, options?: CallOptions): Promise<OccurrencePreview> {
    return (await this.http.request<OccurrencePreview>({ method: 'GET', path: `${path(id)}/next`, query: { count }, idempotent: true, ...options })).body;
  }

  /**
   * Each occurrence in a window, oldest first, with what became of it (succeeded, dead, skipped,
   * removed, upcoming…): `{date: '2026-12-01'}` answers "did the 02:00 run happen that day?" in
   * the schedule's own zone. One page; use eachRun() for all of a window.
   */
  async runs(id: string, query: ScheduleRunsQuery = {}, options?: CallOptions): Promise<ScheduleRunPage> {
    return (await this.http.request<ScheduleRunPage>({ method: 'GET', path: `${path(id)}/runs`, query, idempotent: true, ...options })).body;
  }

  /** Every occurrence of a window, page by page. */
  eachRun(id: string, query: Omit<ScheduleRunsQuery, 'cursor'> = {}, options?: CallOptions): AsyncGenerator<ScheduleRun, void, undefined> {
    return eachItem(async (cursor) => {
      const page = await this.runs(id, { ...query, cursor }, options);
      return { items: page.items, next: page.nextCursor };
    });
  }

  /** A cron or zone change bumps `version` and replaces the occurrences that have not run. */
  async update(id: string, change: UpdateScheduleRequest<P>, options?: CallOptions): Promise<Schedule> {
    return (await this.http.request<Schedule>({ method: 'PATCH', path: path(id), body: change, idempotent: true, ...options })).body;
  }

  /**
   * Deletes the schedule and its occurrences that have not run. Not retried after a 503: a
   * delete that went through answers its retry with a 404 and has no schedule to return, so an
   * UnavailableError may mean deleted or not; delete again, and take a NotFoundError then as deleted.
   */
  async delete(id: string, options?: CallOptions): Promise<Schedule> {
    return (await this.http.request<Schedule>({ method: 'DELETE', path: path(id), idempotent: false, ...options })).body;
  }

  /** Stops making occurrences; the next run time is kept. */
  async pause(id: string, options?: CallOptions): Promise<Schedule> {
    return (await this.http.request<Schedule>({ method: 'POST', path: `${path(id)}/pause`, idempotent: true, ...options })).body;
  }

  /** Makes occurrences again; those missed while paused follow the schedule's `missed` policy. */
  async resume(id: string, options?: CallOptions): Promise<Schedule> {
    return (await this.http.request<Schedule>({ method: 'POST', path: `${path(id)}/resume`, idempotent: true, ...options })).body;
  }
}
