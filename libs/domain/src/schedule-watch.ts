import type { JobState } from './job-state';

/** How a schedule's run went against its `expectWithinSeconds`. */
export const WATCHED_OUTCOMES = ['ok', 'late', 'missed', 'failed'] as const;
export type WatchedOutcome = (typeof WATCHED_OUTCOMES)[number];

/**
 * A run due at `dueAt`, looked at once its expectation has passed: `missed` when no job was made
 * for it or its job had not started by then, `late` when it started after, `failed` when its job
 * is dead, else `ok`. A cancelled run is nobody's failure: null (not counted). `running` when its
 * first attempt is still running: it started, but the row records when only as the attempt ends,
 * so it is judged then.
 */
export function watchedOutcome(
  run: { state: JobState; startedAt: Date | null } | null,
  dueAt: Date,
  expectWithinMs: number,
): WatchedOutcome | 'running' | null {
  if (run === null) return 'missed';
  if (run.state === 'cancelled') return null;
  if (run.state === 'dead') return 'failed';
  if (run.startedAt === null) return run.state === 'running' ? 'running' : 'missed';
  return run.startedAt.getTime() - dueAt.getTime() <= expectWithinMs ? 'ok' : 'late';
}
