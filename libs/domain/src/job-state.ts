/**
 * Job states. Each says who moves a job out of it.
 *
 * - `scheduled`: cold; a row only, due beyond the hot horizon (or not yet handed to Redis).
 *   The promoter moves it to `queued`; the API may cancel or reschedule it.
 * - `queued`: its hint is in Redis (the hot queue, then its pool's ready lists), waiting for its
 *   run time. A worker's claim moves it to `running` (the dispatcher moves only hints, never a
 *   row); the overdue sweep re-hints it if Redis lost the hint; the API may cancel it or
 *   reschedule it (back to `scheduled` when the new time is cold).
 * - `running`: a worker holds it under a lease. The worker finishes it (`succeeded`, `dead`,
 *   or back to `scheduled`/`queued` for a retry); the overdue sweep rescues it when the lease
 *   expires; a worker that shuts down releases it to `queued`.
 * - `succeeded`: terminal; the handler's effect committed with this state change.
 * - `dead`: attempts exhausted or discarded by the handler. `POST /v1/jobs/:id/retry` moves it
 *   back to `scheduled`/`queued`.
 * - `cancelled`: terminal; cancelled before it ran.
 *
 * There is no persisted `failed` state: a failed attempt is recorded in the job's attempt
 * history and the job goes straight back to `scheduled`/`queued` with its next run time, or to
 * `dead`. A row therefore always says what will happen to it next.
 *
 * Who may move a job where is enforced by the guarded UPDATE statements in libs/persistence
 * (each applies only while the row is still in the state it expects); there is no separate
 * transition table to keep in step with them.
 */
export const JOB_STATES = ['scheduled', 'queued', 'running', 'succeeded', 'dead', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

export function isJobState(value: unknown): value is JobState {
  return typeof value === 'string' && (JOB_STATES as readonly string[]).includes(value);
}
