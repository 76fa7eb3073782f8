import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isJobIdString, onConnection, sql } from '../sql';
import { LIST_ATTEMPTS_SQL } from '../statements/list-attempts.sql';

/**
 * How an attempt ended: `succeeded`; `failed` (the handler threw or asked for a retry; the
 * job may run again); `snoozed` (the handler asked to come back later; the job got one more
 * attempt for it); `discarded` (the handler gave up; the job is dead); `lost` (the lease
 * expired and the overdue sweep took the job back); `released` (a worker shutting down handed
 * it back unfinished; it runs again at once).
 */
export type AttemptOutcome = 'succeeded' | 'failed' | 'snoozed' | 'discarded' | 'lost' | 'released';

export interface AttemptRecord {
  jobId: string;
  tenantId: number;
  attempt: number;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: AttemptOutcome | null;
  workerId: string | null;
  error: string | null;
  result: unknown;
}

interface AttemptRow {
  job_id: string;
  tenant_id: number;
  attempt: number;
  started_at: Date;
  finished_at: Date | null;
  outcome: AttemptOutcome | null;
  worker_id: string | null;
  error: string | null;
  result: unknown;
}

@Injectable()
export class AttemptsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * A page of a job's attempts, newest first: at most `limit`, numbered below `before` when given;
   * empty for another tenant's job.
   */
  /** `over`: the caller stopped waiting (onConnection). */
  async listForJob(tenantId: number, jobId: string, page: { before?: number; limit: number }, over?: AbortSignal): Promise<AttemptRecord[]> {
    if (!isJobIdString(jobId)) return [];
    const { rows } = await onConnection(this.dataSource, over, (c) => sql<AttemptRow>(c.manager, LIST_ATTEMPTS_SQL, [jobId, tenantId, page.before ?? null, page.limit]));
    return rows.map((r) => ({
      jobId: String(r.job_id),
      tenantId: r.tenant_id,
      attempt: r.attempt,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
      outcome: r.outcome,
      workerId: r.worker_id,
      error: r.error,
      result: r.result ?? null,
    }));
  }
}
