import { formatNominal, occurrenceKeyPrefix, parseOccurrenceKey, type JobState } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { decodeState } from '../job-state.codec';
import { onConnection, sql } from '../sql';
import { FIND_RETIRED_PAIRS_SQL } from '../statements/find-retired-keys.sql';
import { SCHEDULE_RUNS_SQL, scheduleRunKeysSql } from '../statements/schedule-runs.sql';

/** An occurrence's row: how its run went. */
export interface ScheduleRunRow {
  tenantId: number;
  key: string;
  jobId: string;
  state: JobState;
  attempts: number;
  startedAt: Date | null;
  finishedAt: Date | null;
  result: unknown;
  lastError: string | null;
}

/** A schedule's runs, read by their occurrence keys (GET /v1/schedules/:id/runs). */
@Injectable()
export class ScheduleRunsRepository {
  constructor(private readonly db: DataSource) {}

  /** The rows among the (tenant, key) pairs, any order: one statement however many schedules they are of. `over`: the caller stopped waiting (onConnection). */
  async rows(refs: readonly { tenantId: number; key: string }[], over?: AbortSignal): Promise<ScheduleRunRow[]> {
    if (refs.length === 0) return [];
    const { rows } = await onConnection(this.db, over, (c) => sql<{
      tenant_id: number; key: string; id: string; state: string; attempts: number; finished_at: Date | null; result: unknown; last_error: string | null; started_at: Date | null;
    }>(c.manager, SCHEDULE_RUNS_SQL, [refs.map((r) => r.tenantId), refs.map((r) => r.key)]));
    return rows.map((r) => ({
      tenantId: r.tenant_id, key: r.key, jobId: r.id, state: decodeState(r.state), attempts: r.attempts, startedAt: r.started_at, finishedAt: r.finished_at, result: r.result ?? null, lastError: r.last_error,
    }));
  }

  /** Which of the (tenant, key) pairs retention removed, with how each job ended (any order): runs whose rows are gone. */
  async retired(refs: readonly { tenantId: number; key: string }[]): Promise<{ tenantId: number; key: string; state: JobState }[]> {
    if (refs.length === 0) return [];
    const { rows } = await sql<{ tenant_id: number; key: string; state: string }>(this.db, FIND_RETIRED_PAIRS_SQL, [refs.map((r) => r.tenantId), refs.map((r) => r.key)]);
    return rows.map((r) => ({ tenantId: r.tenant_id, key: r.key, state: decodeState(r.state) }));
  }

  /**
   * The nominal instants in (after, through] of the schedule's occurrences that have a row (or
   * had one, removed by retention): its runs under a timing it no longer has. Oldest first, or
   * newest first; at most `limit`.
   */
  async instantsWithRows(tenantId: number, scheduleId: string, after: Date, through: Date, limit: number, newestFirst = false, over?: AbortSignal): Promise<Date[]> {
    // Keys hold whole seconds, so (after, through] is [the next whole second, through's second].
    const lo = Math.floor(after.getTime() / 1000) * 1000 + 1000;
    const hi = Math.floor(through.getTime() / 1000) * 1000;
    if (lo > hi || limit <= 0) return [];
    const prefix = occurrenceKeyPrefix(scheduleId);
    const { rows } = await onConnection(this.db, over, (c) => sql<{ key: string }>(c.manager, scheduleRunKeysSql(newestFirst), [
      tenantId, prefix + formatNominal(new Date(lo)), prefix + formatNominal(new Date(hi)), limit,
    ]));
    return rows.flatMap((r) => parseOccurrenceKey(r.key)?.nominal ?? []);
  }
}
