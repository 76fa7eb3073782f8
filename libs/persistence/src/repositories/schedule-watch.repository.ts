import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { RECORD_SCHEDULE_WATCH_SQL } from '../statements/record-schedule-watch.sql';
import { SCHEDULES_BEHIND_SQL, WATCHED_SCHEDULES_SQL } from '../statements/watched-schedules.sql';

/** A schedule whose runs are watched: its timing, its expectation, and how far it was looked at. */
export interface WatchedSchedule {
  id: string;
  tenantId: number;
  cron: string;
  timezone: string;
  expectWithinSeconds: number;
  since: Date;
}

/** The schedule watch's reads and writes of `schedules` (expect_within_seconds, watched_through, last_outcome). */
@Injectable()
export class ScheduleWatchRepository {
  constructor(private readonly db: DataSource) {}

  async due(now: Date, limit: number, leftOut: readonly string[] = []): Promise<WatchedSchedule[]> {
    const { rows } = await sql<{ id: string; tenant_id: number; cron: string; timezone: string; expect_within_seconds: number; since: Date }>(
      this.db, WATCHED_SCHEDULES_SQL, [now, limit, leftOut],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, cron: r.cron, timezone: r.timezone, expectWithinSeconds: r.expect_within_seconds, since: r.since }));
  }

  /** Per tenant, how many of its watched schedules are behind (latest watched run late, missed or failed), most first. */
  async behind(): Promise<{ tenantId: number; schedules: number }[]> {
    const { rows } = await sql<{ tenant_id: number; n: number }>(this.db, SCHEDULES_BEHIND_SQL, []);
    return rows.map((r) => ({ tenantId: r.tenant_id, schedules: r.n }));
  }

  /**
   * Each schedule watched through `through`, if still watched from `since` (the look's start, as
   * `due` read it); with `last`, its latest watched run's outcome. One statement; the ids recorded.
   */
  async record(looks: readonly { id: string; since: Date; through: Date; last: { outcome: string; dueAt: Date } | null }[]): Promise<Set<string>> {
    if (looks.length === 0) return new Set();
    const { rows } = await sql<{ id: string }>(this.db, RECORD_SCHEDULE_WATCH_SQL, [
      looks.map((l) => l.id), looks.map((l) => l.through), looks.map((l) => l.last?.outcome ?? null), looks.map((l) => l.last?.dueAt ?? null), looks.map((l) => l.since),
    ]);
    return new Set(rows.map((r) => r.id));
  }
}
