// The API's view of a schedule row: what a schedule is, what a PATCH changes, and the row's mapping.
// Shared by SchedulesRepository and the removal of a schedule's unrun occurrences.

import type { Schedule } from '@almanac/domain';

export type MissedPolicy = 'skip' | 'latest' | 'all';

export interface ScheduleView {
  id: string;
  tenantId: number;
  key: string;
  kind: string;
  cron: string;
  timezone: string;
  payload: unknown;
  maxAttempts: number;
  missed: MissedPolicy;
  paused: boolean;
  version: number;
  nextRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** When its cron or zone last changed, null if never: earlier runs follow the timing they had. */
  timingSince: Date | null;
  /** Each run should start within this many seconds of its due instant (the schedule watch), or null. */
  expectWithinSeconds: number | null;
  /** The latest watched run's outcome (ok, late, missed, failed) and when it was due. */
  lastOutcome: string | null;
  lastOutcomeAt: Date | null;
  /** Why the recurring sweep paused it (a value of its occurrences Postgres refused); null otherwise. Cleared on resume. */
  lastError: string | null;
}

/** A schedule to make: the view's own fields, and its parsed timing (its first run is its first occurrence after the database's now). */
export type NewSchedule = Pick<ScheduleView, 'tenantId' | 'key' | 'kind' | 'cron' | 'timezone' | 'payload' | 'maxAttempts' | 'missed' | 'expectWithinSeconds'> & {
  timing: Schedule;
};

/** Fields a PATCH may change. `timing` is set when cron or timezone changed (version bump). */
export interface ScheduleChange {
  kind?: string;
  cron?: string;
  timezone?: string;
  payload?: unknown;
  maxAttempts?: number;
  missed?: MissedPolicy;
  /** null clears it. */
  expectWithinSeconds?: number | null;
  /**
   * Set when cron or timezone changed: the new timing (its next run is its first occurrence
   * after the database's now), and the cron and timezone the change was computed from. The update
   * applies only if those are still current, so two concurrent PATCHes (one of cron, one of
   * timezone) cannot silently undo each other.
   */
  timing?: { schedule: Schedule; from: { cron: string; timezone: string } };
}

/** Job rows of a schedule that had not run yet, removed when its timing or jobs' values changed, it was paused or deleted (their hints go stale). */
export interface RemovedOccurrences {
  count: number;
}

export const COLUMNS = `id::text AS id, tenant_id, key, kind, cron, timezone, payload, max_attempts, missed, paused,
  version, next_run_at, created_at, updated_at, timing_since, expect_within_seconds, last_outcome, last_outcome_at, last_error`;

export interface RawSchedule {
  id: string;
  tenant_id: number;
  key: string;
  kind: string;
  cron: string;
  timezone: string;
  payload: unknown;
  max_attempts: number;
  missed: string;
  paused: boolean;
  version: number;
  next_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
  timing_since: Date | null;
  expect_within_seconds: number | null;
  last_outcome: string | null;
  last_outcome_at: Date | null;
  last_error: string | null;
}

export function toView(r: RawSchedule): ScheduleView {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    key: r.key,
    kind: r.kind,
    cron: r.cron,
    timezone: r.timezone,
    payload: r.payload,
    maxAttempts: r.max_attempts,
    missed: r.missed as MissedPolicy,
    paused: r.paused,
    version: r.version,
    nextRunAt: r.next_run_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    timingSince: r.timing_since,
    expectWithinSeconds: r.expect_within_seconds,
    lastOutcome: r.last_outcome,
    lastOutcomeAt: r.last_outcome_at,
    lastError: r.last_error,
  };
}

/** The key range holding one schedule's occurrences: `schedule:<id>:…` (';' sorts right after ':'). */
export function occurrenceKeyRange(scheduleId: string): [string, string] {
  return [`schedule:${scheduleId}:`, `schedule:${scheduleId};`];
}
