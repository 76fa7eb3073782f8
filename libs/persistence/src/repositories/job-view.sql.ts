// The API's view of a job row: select list, raw row and mapping. Shared by JobQueriesRepository
// (reads) and JobChangesRepository (the RETURNING of its guarded updates).
import type { DataSource } from 'typeorm';
import { JobRecord, JobRow, rowToJob } from '../job-record';

/** A job row as the API reads it, with its keyset position. */
export interface JobView extends JobRecord {
  /** run_at at microsecond precision, UTC, sortable as text: the keyset cursor's first half. */
  position: string;
}

export function columns(alias = ''): string {
  const p = alias ? `${alias}.` : '';
  return `${p}id::text AS id, ${p}tenant_id AS tenant_id, ${p}kind AS kind, ${p}key AS key, ${p}run_at AS run_at,
    ${p}state AS state, ${p}attempts AS attempts, ${p}max_attempts AS max_attempts, ${p}payload AS payload,
    ${p}result AS result, ${p}last_error AS last_error, ${p}lease_until AS lease_until, ${p}finished_at AS finished_at,
    to_char(${p}run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position`;
}
export const COLUMNS = columns();

export type RawJob = JobRow & { position: string };

export function toView(r: RawJob): JobView {
  return { ...rowToJob(r), position: r.position };
}

export type Runner = Pick<DataSource, 'query'>;

/** One job of a tenant by id, or null (another tenant's job is not found either). */
export async function findViewForTenant(db: Runner, tenantId: number, id: string): Promise<JobView | null> {
  const rows: RawJob[] = await db.query(`SELECT ${COLUMNS} FROM jobs WHERE id = $1 AND tenant_id = $2`, [
    id,
    tenantId,
  ]);
  return rows[0] ? toView(rows[0]) : null;
}
