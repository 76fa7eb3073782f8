import type { JobState } from './job-state';

/** How a schedule's run went against its `expectWithinSeconds`. */
export const WATCHED_OUTCOMES = ['ok', 'late', 'missed', 'failed'] as const;
export type WatchedOutcome = (typeof WATCHED_OUTCOMES)[number];

/**
 * A run due at `dueAt`, looked at once its expectation has passed: `missed` when no job was made
 * for it or its job had not started by then, `late` when it started after, `failed` when its job
 * is dead, else `ok`. A cancelled run is nobody's failure: null (not counted). `running` when it
 * has not ended after an attempt (its first still running, or one failed and a retry waits): it
 * may yet end dead, and a running first attempt's start is recorded only as it ends, so it is
 * judged then. `hold` false (held long enough): judged as it stands, a started run by its start
 * (unknown yet: as on time).
 */
export function watchedOutcome(
  run: { state: JobState; startedAt: Date | null; attempts?: number } | null,
  dueAt: Date,
  expectWithinMs: number,
  hold = true,
): WatchedOutcome | 'running' | null {
  if (run === null) return 'missed';
  if (run.state === 'cancelled') return null;
  if (run.state === 'dead') return 'failed';
  const started = run.state === 'running' || (run.attempts ?? 0) > 0;
  if (hold && started && run.state !== 'succeeded') return 'running';
  if (run.startedAt === null) return started ? 'ok' : 'missed';
  return run.startedAt.getTime() - dueAt.getTime() <= expectWithinMs ? 'ok' : 'late';
}
