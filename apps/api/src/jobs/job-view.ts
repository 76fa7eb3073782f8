import { type JobProgress, publicAttemptError, tierFor, type JobState, type TierHorizons } from '@almanac/domain';
import type { AttemptRecord, JobRecord } from '@almanac/persistence';

export interface JobSummary {
  id: string;
  kind: string;
  key: string;
  runAt: string;
  tier: string;
  state: JobState;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
}

/** The job as ingest and lists answer it (no payload: lists stay small, the client sent it). */
export function jobSummary(j: JobRecord, now: Date, horizons: TierHorizons): JobSummary {
  return {
    id: j.id,
    kind: j.kind,
    key: j.key,
    runAt: j.runAt.toISOString(),
    tier: tierFor(j.runAt, now, horizons),
    state: j.state,
    attempts: j.attempts,
    maxAttempts: j.maxAttempts,
    createdAt: j.createdAt.toISOString(),
  };
}

/**
 * The job with its attempts, as its tenant may see it: errors as a code and a message meant for
 * the tenant (`publicAttemptError`), never an exception's text or the worker's host name (both
 * stay in job_attempts and the logs, for the operator).
 */
export function jobDetail(j: JobRecord & { progress?: JobProgress | null; resultDigest?: string | null }, attempts: AttemptRecord[], now: Date, horizons: TierHorizons) {
  const last = publicAttemptError(j.lastError);
  return {
    ...jobSummary(j, now, horizons),
    payload: j.payload ?? null,
    result: j.result ?? null,
    resultDigest: j.resultDigest ?? null,
    lastError: last?.message ?? null,
    lastErrorCode: last?.code ?? null,
    finishedAt: j.finishedAt ? j.finishedAt.toISOString() : null,
    progress: j.progress ?? null,
    history: attempts.map(attemptView),
  };
}

/** One attempt as the API shows it: its error as the tenant may see it (publicAttemptError). */
export function attemptView(a: AttemptRecord) {
  const error = publicAttemptError(a.error);
  return {
    attempt: a.attempt,
    startedAt: a.startedAt.toISOString(),
    finishedAt: a.finishedAt ? a.finishedAt.toISOString() : null,
    outcome: a.outcome,
    error: error?.message ?? null,
    errorCode: error?.code ?? null,
    result: a.result ?? null,
  };
}

export type AttemptView = ReturnType<typeof attemptView>;

/** What a removed job's reserved key still tells (a replay with `"replay": "result"`). */
export interface RemovedJob {
  removed: true;
  key: string;
  state: JobState;
  removedOn: string;
  reservedThrough: string | null;
  resultDigest: string | null;
}

export function removedJob(r: { key: string; state: JobState; removedOn: string; reservedThrough: string | null; resultDigest: string | null }): RemovedJob {
  return { removed: true, key: r.key, state: r.state, removedOn: r.removedOn, reservedThrough: r.reservedThrough, resultDigest: r.resultDigest };
}
