/**
 * What a handler reports while it runs (`ctx.progress`): how far it got, in percent, and a short
 * note. Kept on the job row with the attempt that reported it, so a retry's reader can tell an
 * earlier attempt's progress from its own.
 */
export interface JobProgress {
  percent: number;
  note: string | null;
  attempt: number;
  /** When it was reported (ISO 8601). */
  at: string;
}

/** A note longer than this is cut: progress is a line on a dashboard, not a log. */
export const MAX_PROGRESS_NOTE = 200;

/** Validates a report; throws RangeError naming the argument (a handler's bug, not the job's). */
export function progressReport(percent: number, note: string | undefined, attempt: number, at: Date): JobProgress {
  if (typeof percent !== 'number' || !Number.isFinite(percent) || percent < 0 || percent > 100) {
    throw new RangeError(`ctx.progress: percent must be a number from 0 to 100, got ${String(percent)}`);
  }
  if (note !== undefined && typeof note !== 'string') throw new RangeError('ctx.progress: note must be a string');
  return { percent, note: note === undefined ? null : note.slice(0, MAX_PROGRESS_NOTE), attempt, at: at.toISOString() };
}
