/**
 * Job ids are made by `almanac_job_id()` in Postgres: milliseconds since 2026-01-01T00:00Z
 * shifted left 12 bits, or'ed with a sequence. The creation time is therefore in the id and
 * is not stored again. Ids stay below 2^53 until 2095, but travel as strings in the API.
 */
export const JOB_ID_EPOCH_MS = 1767225600000;

export function createdAtFromJobId(id: string | bigint): Date {
  // Below 2^53 the float division by 4096 is exact and much cheaper than BigInt (hot path).
  const n = typeof id === 'string' ? Number(id) : Number.NaN;
  if (Number.isSafeInteger(n)) return new Date(JOB_ID_EPOCH_MS + Math.floor(n / 4096));
  return new Date(JOB_ID_EPOCH_MS + Number(BigInt(id) >> 12n));
}

/**
 * The hot queue's id for a row: `j-<id>` (BullMQ refuses integer or ':'-containing custom ids).
 * A worker re-enqueueing a row after attempt N (a retry due soon, a release at shutdown) uses
 * `j-<id>-r<N>`: the dispatcher may not have removed its own finished `j-<id>` yet, and BullMQ
 * would silently ignore a second add of that id. The row's state and attempt decide what runs,
 * so two copies of one row in the queue are harmless; a lost one would wait for the overdue sweep.
 */
export function queueJobId(id: string | bigint, afterAttempt?: number): string {
  return afterAttempt === undefined ? `j-${id}` : `j-${id}-r${afterAttempt}`;
}

const QUEUE_JOB_ID = /^j-(\d+)(?:-r\d+)?$/;

export function jobIdFromQueueJobId(queueId: string): string {
  const m = QUEUE_JOB_ID.exec(queueId);
  if (!m) throw new Error(`not an Almanac queue job id: ${queueId}`);
  return m[1];
}
