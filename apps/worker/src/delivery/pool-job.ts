/**
 * What the dispatcher puts on a pool queue and a worker reads back. Like the hot queue it
 * carries no payload: the worker loads the row, which is also how it checks that the delivery
 * is still current (state running, same attempt).
 */
export interface PoolJobData {
  /** job row id */
  id: string;
  /** tenant id */
  t: number;
  /** attempt number this delivery runs (jobs.attempts after the claim) */
  a: number;
  /** due time, epoch ms: dispatch lag is measured from it */
  d: number;
}

/**
 * One pool job per attempt: a rescued job (attempt + 1) never collides with a stale pool job
 * of the attempt before it, which BullMQ would otherwise treat as a duplicate and drop.
 */
export function poolJobId(id: string, attempt: number): string {
  return `j-${id}-a${attempt}`;
}
