import type { Hint } from '@almanac/domain';

/**
 * A sweep does a bounded amount of work per call and says what it did. `more` asks the runner
 * to call again at once instead of waiting out the interval (the cap was hit, work remains).
 */
export interface SweepResult {
  more?: boolean;
  /** Another replica held the sweep's lock; nothing was done. */
  skipped?: boolean;
}

export interface Sweep<R extends SweepResult = SweepResult> {
  readonly name: SweepName;
  runOnce(now: Date): Promise<R>;
}

export const SWEEP_NAMES = ['promotion', 'recurring', 'overdue', 'rescue', 'job_states', 'tenant_backlog', 'bulk_operations', 'retention', 'due_soon', 'epoch_watch', 'schedule_watch', 'stored_bytes'] as const;
export type SweepName = (typeof SWEEP_NAMES)[number];

/**
 * The run's time as it goes on: `now` (its start, by the sweep's clock) plus what has elapsed
 * since. Queue delays are reckoned from it: BullMQ stamps its own time at the add, so a hint
 * added 10 s into a long run with a delay reckoned from `now` fired 10 s late.
 */
export function runningFrom(now: Date): () => Date {
  const started = Date.now();
  return () => new Date(now.getTime() + (Date.now() - started));
}

/**
 * The time by which a sweep judges what is late: its own clock, but never ahead of the
 * database's, by which rows, leases and heartbeats are written. A host running fast must not
 * act on what is not due yet (a second hint, a live run taken for lost); one running slow acts
 * late by its lag, as before.
 */
export function notAheadOfDatabase(now: Date, dbNowMs: number): Date {
  return new Date(Math.min(now.getTime(), dbNowMs));
}

/** What the sweeps need from the hot queue (HotQueue satisfies it). */
export interface Enqueuer {
  enqueue(hints: readonly Hint[], now: Date, opts?: { repair?: boolean }): Promise<void>;
}
