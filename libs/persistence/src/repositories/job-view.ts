// The API's view of a job row: raw row and mapping (the select list is
// statements/job-view-columns.sql.ts). Shared by JobQueriesRepository (reads) and
// JobChangesRepository (the RETURNING of its guarded updates).
import type { JobProgress } from '@almanac/domain';
import type { DataSource, QueryRunner } from 'typeorm';
import { JobRecord, JobRow, rowToJob } from '../job-record';
import { FIND_JOB_FOR_TENANT_SQL } from '../statements/find-job-for-tenant.sql';

/** A job row as the API reads it, with its keyset position. */
export interface JobView extends JobRecord {
  /** run_at at microsecond precision, UTC, sortable as text: the keyset cursor's first half. */
  position: string;
  /** What its handler last reported (`ctx.progress`), with the attempt that reported it; null: nothing. */
  progress: JobProgress | null;
  /** Hex of its result's digest (statements/result-digest.sql), which a removed job's key keeps; null without a result. */
  resultDigest: string | null;
}

export type RawJob = JobRow & { position: string; progress: JobProgress | null; result_digest: string | null };

export function toView(r: RawJob): JobView {
  return { ...rowToJob(r), position: r.position, progress: r.progress ?? null, resultDigest: r.result_digest ?? null };
}

export type Runner = Pick<DataSource, 'query'>;

/** One job of a tenant by id, or null (another tenant's job is not found either). */
export async function findViewForTenant(db: Runner, tenantId: number, id: string): Promise<JobView | null> {
  const rows: RawJob[] = await db.query(FIND_JOB_FOR_TENANT_SQL, [id, tenantId]);
  return rows[0] ? toView(rows[0]) : null;
}

/** `read` in one REPEATABLE READ READ ONLY transaction on `runner`'s connection: all its statements see one snapshot. */
export async function inSnapshot<T>(runner: QueryRunner, read: (tx: Runner) => Promise<T>): Promise<T> {
  await runner.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    const result = await read(runner);
    await runner.query('COMMIT');
    return result;
  } catch (err) {
    await runner.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
