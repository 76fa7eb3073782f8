/**
 * Job states. Each says who moves a job out of it.
 *
 * - `scheduled`: cold; a row only, due beyond the hot horizon (or not yet handed to Redis).
 *   The promoter moves it to `queued`; the API may cancel or reschedule it.
 * - `queued`: in the hot queue (Redis), waiting for its run time. The dispatcher moves it to
 *   `running`; the overdue sweep re-enqueues it if Redis lost it; the API may cancel it or
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
 */
export const JOB_STATES = ['scheduled', 'queued', 'running', 'succeeded', 'dead', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States nothing ever leaves (no outgoing transitions in the table below). */
export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'cancelled'];

/**
 * Legal transitions, as data: `from → allowed targets`.
 *
 * Self-transitions are real moves, not no-ops: `scheduled → scheduled` is a reschedule that stays
 * cold, `queued → queued` a re-enqueue (overdue sweep, Redis lost it) or a reschedule within the
 * hot horizon. `running` is entered only from `queued`, and `succeeded` only from `running`.
 * `dead` is not terminal: an operator retry sends it back through the tiers.
 */
export const JOB_TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  scheduled: ['queued', 'cancelled', 'scheduled'],
  queued: ['running', 'scheduled', 'queued', 'cancelled'],
  running: ['succeeded', 'dead', 'scheduled', 'queued'],
  succeeded: [],
  dead: ['scheduled', 'queued'],
  cancelled: [],
};

export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
  constructor(
    readonly from: JobState,
    readonly to: JobState,
  ) {
    super(`a job cannot move from ${from} to ${to}`);
  }
}

export function isJobState(value: unknown): value is JobState {
  return typeof value === 'string' && (JOB_STATES as readonly string[]).includes(value);
}

export function canTransition(from: JobState, to: JobState): boolean {
  return JOB_TRANSITIONS[from].includes(to);
}

/** Throws IllegalTransitionError unless `from → to` is in the table. */
export function assertTransition(from: JobState, to: JobState): void {
  if (!canTransition(from, to)) throw new IllegalTransitionError(from, to);
}
