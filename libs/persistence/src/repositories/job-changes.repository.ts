import { Injectable } from '@nestjs/common';
import { type JobState, MAX_LIFETIME_ATTEMPTS, retryWithinLifetime } from '@almanac/domain';
import { DataSource } from 'typeorm';
import { STATE_CODE, decodeState } from '../job-state.codec';
import { CANCEL_JOB_SQL } from '../statements/cancel-job.sql';
import { demoteToScheduled } from '../statements/demote-to-scheduled.sql';
import { RESCHEDULE_JOB_SQL } from '../statements/reschedule-job.sql';
import { RETRY_DEAD_JOB_SQL } from '../statements/retry-dead-job.sql';
import { findViewForTenant, JobView, RawJob, Runner, toView } from './job-view';

export type CancelOutcome =
  | { outcome: 'cancelled'; previous: JobState; job: JobView }
  | { outcome: 'already_cancelled'; job: JobView }
  | { outcome: 'conflict'; state: JobState }
  | { outcome: 'not_found' };

export type RescheduleOutcome =
  | { outcome: 'rescheduled'; previous: JobState; job: JobView }
  | { outcome: 'conflict'; state: JobState }
  /** A retry refused: the job has used `attempts`, and MAX_LIFETIME_ATTEMPTS would be passed. */
  | { outcome: 'attempt_limit'; attempts: number }
  | { outcome: 'not_found' };

/** TypeORM answers UPDATE/DELETE with `[rows, rowCount]` and everything else with `rows`. */
async function mutate<T = unknown>(db: Runner, sql: string, params: unknown[]): Promise<T[]> {
  const raw: unknown = await db.query(sql, params);
  if (Array.isArray(raw) && raw.length === 2 && Array.isArray(raw[0]) && typeof raw[1] === 'number') return raw[0] as T[];
  return raw as T[];
}

/** API-driven state changes on jobs, each one guarded UPDATE that checks the state it expects. */
@Injectable()
export class JobChangesRepository {
  constructor(private readonly db: DataSource) {}

  /** Cancels a job that has not started. Guarded: the dispatcher's q→r and this race on the row. */
  async cancel(tenantId: number, id: string): Promise<CancelOutcome> {
    const rows = await mutate<RawJob & { previous: string }>(this.db, CANCEL_JOB_SQL, [id, tenantId]);
    if (rows[0]) return { outcome: 'cancelled', previous: decodeState(rows[0].previous), job: toView(rows[0]) };
    const job = await findViewForTenant(this.db, tenantId, id);
    if (!job) return { outcome: 'not_found' };
    if (job.state === 'cancelled') return { outcome: 'already_cancelled', job };
    return { outcome: 'conflict', state: job.state };
  }

  /** Moves a not-yet-running job to a new run time and tier state (`scheduled` or `queued`). */
  async reschedule(tenantId: number, id: string, runAt: Date, state: 'scheduled' | 'queued'): Promise<RescheduleOutcome> {
    const rows = await mutate<RawJob & { previous: string }>(this.db, RESCHEDULE_JOB_SQL, [id, tenantId, runAt, STATE_CODE[state]]);
    return this.changeOutcome(tenantId, id, rows);
  }

  /**
   * Gives a dead job `extraAttempts` more attempts from `runAt`. Attempt numbers keep counting
   * (job_attempts is keyed by attempt number, so history is never overwritten): max_attempts is
   * raised instead of attempts reset, up to MAX_LIFETIME_ATTEMPTS in the job's life.
   */
  async retryDead(
    tenantId: number,
    id: string,
    /** null: now, by the database's clock. */
    runAt: Date | null,
    state: 'scheduled' | 'queued',
    extraAttempts: number,
  ): Promise<RescheduleOutcome> {
    for (let tries = 1; ; tries++) {
      const rows = await mutate<RawJob & { previous: string }>(this.db, RETRY_DEAD_JOB_SQL, [
        id, tenantId, runAt, STATE_CODE[state], extraAttempts, MAX_LIFETIME_ATTEMPTS,
      ]);
      // Dead when read again yet not retried: past the limit, or it died (again) after the
      // statement looked (a concurrent retry ran and failed), which is no limit: try again.
      let raced = false;
      const outcome = await this.changeOutcome(tenantId, id, rows, (job) => {
        if (job.state !== 'dead') return undefined;
        if (!retryWithinLifetime(job.attempts, extraAttempts)) return { outcome: 'attempt_limit', attempts: job.attempts };
        raced = true;
        return { outcome: 'conflict', state: job.state };
      });
      if (!raced || tries >= 3) return outcome;
    }
  }

  /** Rows inserted as `queued` whose enqueue failed (Redis down): see demoteToScheduled. */
  demoteToScheduled(items: { id: string; runAt: Date }[]): Promise<number> {
    return demoteToScheduled(this.db, items);
  }

  private async changeOutcome(
    tenantId: number,
    id: string,
    rows: (RawJob & { previous: string })[],
    /** Why an existing job was left alone, when it is not its state. */
    refusal: (job: JobView) => RescheduleOutcome | undefined = () => undefined,
  ): Promise<RescheduleOutcome> {
    if (rows[0]) return { outcome: 'rescheduled', previous: decodeState(rows[0].previous), job: toView(rows[0]) };
    const job = await findViewForTenant(this.db, tenantId, id);
    if (!job) return { outcome: 'not_found' };
    return refusal(job) ?? { outcome: 'conflict', state: job.state };
  }
}
