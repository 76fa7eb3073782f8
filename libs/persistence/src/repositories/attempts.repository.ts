import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { type Db, isJobIdString, sql } from '../sql';

/**
 * How an attempt ended: `succeeded`; `failed` (the handler threw or asked for a retry; the
 * job may run again); `discarded` (the handler gave up; the job is dead); `lost` (the lease
 * expired and the overdue sweep took the job back); `released` (a worker shutting down handed
 * it back unfinished; it runs again at once).
 */
export type AttemptOutcome = 'succeeded' | 'failed' | 'discarded' | 'lost' | 'released';

export interface AttemptStart {
  jobId: string;
  tenantId: number;
  attempt: number;
  startedAt: Date;
  workerId?: string | null;
}

export interface AttemptFinish {
  jobId: string;
  attempt: number;
  finishedAt: Date;
  outcome: AttemptOutcome;
  error?: string | null;
  result?: unknown;
}

export type AttemptInput = AttemptStart & Partial<Omit<AttemptFinish, 'jobId' | 'attempt'>>;

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

/*
 * Writes many attempts in one statement. A redelivered attempt already on record keeps its
 * start; a finish is written once (a finished attempt is never overwritten).
 */
const RECORD_MANY_SQL = `
INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, worker_id, finished_at, outcome, error, result)
SELECT j, t, a, s, w, f, o, e, r
  FROM json_to_recordset($1::json) AS x(j bigint, t int, a smallint, s timestamptz, w text, f timestamptz, o text, e text, r jsonb)
ON CONFLICT (job_id, attempt) DO UPDATE
   SET finished_at = EXCLUDED.finished_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error, result = EXCLUDED.result
 WHERE job_attempts.finished_at IS NULL AND EXCLUDED.finished_at IS NOT NULL`;

@Injectable()
export class AttemptsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Records that an attempt began; a repeat of the same (job, attempt) is a no-op. */
  async start(a: AttemptStart, db: Db = this.dataSource): Promise<void> {
    await this.recordMany([a], db);
  }

  /** Closes an open attempt; false when it was unknown or already finished. */
  async finish(f: AttemptFinish, db: Db = this.dataSource): Promise<boolean> {
    if (!isJobIdString(f.jobId)) return false;
    const { rowCount } = await sql(
      db,
      `UPDATE job_attempts SET finished_at = $3, outcome = $4, error = $5, result = $6::jsonb
        WHERE job_id = $1 AND attempt = $2 AND finished_at IS NULL`,
      [f.jobId, f.attempt, f.finishedAt, f.outcome, f.error ?? null, f.result === undefined ? null : JSON.stringify(f.result)],
    );
    return rowCount === 1;
  }

  /** Starts and/or finishes many attempts in one round trip (workers batching their writes). */
  async recordMany(items: readonly AttemptInput[], db: Db = this.dataSource): Promise<void> {
    if (items.length === 0) return;
    // One statement may not touch a row twice: the last write for a (job, attempt) wins.
    const latest = new Map(items.map((a) => [`${a.jobId}/${a.attempt}`, a]));
    const doc = JSON.stringify(
      [...latest.values()].map((a) => ({
        j: a.jobId,
        t: a.tenantId,
        a: a.attempt,
        s: a.startedAt,
        w: a.workerId ?? null,
        f: a.finishedAt ?? null,
        o: a.outcome ?? null,
        e: a.error ?? null,
        r: a.result === undefined ? null : a.result,
      })),
    );
    await sql(db, RECORD_MANY_SQL, [doc]);
  }

  /** A job's attempts, oldest first; empty for another tenant's job. */
  async listForJob(tenantId: number, jobId: string, db: Db = this.dataSource): Promise<AttemptRecord[]> {
    if (!isJobIdString(jobId)) return [];
    const { rows } = await sql<AttemptRow>(
      db,
      `SELECT job_id, tenant_id, attempt, started_at, finished_at, outcome, worker_id, error, result
         FROM job_attempts WHERE job_id = $1 AND tenant_id = $2 ORDER BY attempt`,
      [jobId, tenantId],
    );
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
