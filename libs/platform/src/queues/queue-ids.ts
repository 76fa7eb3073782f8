/**
 * Ids of the hot queue's jobs, all in one place. BullMQ refuses integer or ':'-containing custom
 * ids, and its id is what makes a second add a no-op while the job is in Redis.
 *
 * - `j-<row id>`: one row.
 * - `j-<row id>-r<N>`: a worker re-enqueueing a row after attempt N (a retry due soon, a release
 *   at shutdown). The dispatcher may not have removed its own finished `j-<id>` yet, and BullMQ
 *   would silently ignore a second add of that id. The row's state and attempt decide what runs,
 *   so two copies of one row in the queue are harmless; a lost one would wait for the overdue
 *   sweep.
 * - `e-<first id>-<last id>-<count>`: an envelope of rows sharing a tenant, kind and due instant;
 *   deterministic, so a promoter retry of the same batch adds nothing.
 */
export function queueJobId(id: string | bigint, afterAttempt?: number): string {
  return afterAttempt === undefined ? `j-${id}` : `j-${id}-r${afterAttempt}`;
}

export function envelopeJobId(ids: readonly string[]): string {
  return `e-${ids[0]}-${ids[ids.length - 1]}-${ids.length}`;
}

const QUEUE_JOB_ID = /^j-(\d+)(?:-r\d+)?$/;

/** The row id in a one-row queue id (`j-<id>` or `j-<id>-r<N>`). */
export function jobIdFromQueueJobId(queueId: string): string {
  const m = QUEUE_JOB_ID.exec(queueId);
  if (!m) throw new Error(`not an Almanac queue job id: ${queueId}`);
  return m[1];
}
