import { storableText } from './storable-json';

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

/**
 * Validates a report; throws RangeError naming the argument (a handler's bug, not the job's). The
 * note is made storable: one jsonb refuses failed every running job's lease renewal with it.
 */
export function progressReport(percent: number, note: string | undefined, attempt: number, at: Date): JobProgress {
  if (typeof percent !== 'number' || !Number.isFinite(percent) || percent < 0 || percent > 100) {
    throw new RangeError(`ctx.progress: percent must be a number from 0 to 100, got ${String(percent)}`);
  }
  if (note !== undefined && typeof note !== 'string') throw new RangeError('ctx.progress: note must be a string');
  return { percent, note: note === undefined ? null : storableText(cut(note, MAX_PROGRESS_NOTE)), attempt, at: at.toISOString() };
}

/** `text` cut to `max` UTF-16 units, never between the two halves of a pair (one half is a value jsonb refuses). */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
