import type { JobState } from '@almanac/domain';
import { createdAtFromJobId } from './job-id';
import { decodeState } from './job-state.codec';
import { jobPayload } from './statements/job-payload.sql';

/** A jobs row as the rest of the system sees it. Ids are strings (bigint in Postgres). */
export interface JobRecord {
  id: string;
  tenantId: number;
  kind: string;
  key: string;
  runAt: Date;
  state: JobState;
  attempts: number;
  maxAttempts: number;
  /** Parsed from the stored `json` text, which is the JSON.stringify of what was inserted (key order kept). */
  payload: unknown;
  result: unknown;
  lastError: string | null;
  leaseUntil: Date | null;
  finishedAt: Date | null;
  /** Decoded from the id; not a column. */
  createdAt: Date;
}

/** Column list matching `rowToJob`; `j` is the jobs alias. */
export const JOB_COLUMNS =
  `j.id, j.tenant_id, j.kind, j.key, j.run_at, j.state, j.attempts, j.max_attempts, ${jobPayload('j')} AS payload, j.result, j.last_error, j.lease_until, j.finished_at`;

export interface JobRow {
  id: string;
  tenant_id: number;
  kind: string;
  key: string;
  run_at: Date;
  state: string;
  attempts: number;
  max_attempts: number;
  payload: unknown;
  result: unknown;
  last_error: string | null;
  lease_until: Date | null;
  finished_at: Date | null;
}

export function rowToJob(r: JobRow): JobRecord {
  return {
    id: String(r.id),
    tenantId: r.tenant_id,
    kind: r.kind,
    key: r.key,
    runAt: r.run_at,
    state: decodeState(r.state),
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    payload: r.payload ?? null,
    result: r.result ?? null,
    lastError: r.last_error,
    leaseUntil: r.lease_until,
    finishedAt: r.finished_at,
    createdAt: createdAtFromJobId(String(r.id)),
  };
}
