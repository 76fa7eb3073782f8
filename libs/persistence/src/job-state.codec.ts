import type { JobState } from '@almanac/domain';

/** One-byte state codes stored in `jobs.state` ("char"); the partial indexes name these codes. */
export const STATE_CODE: Readonly<Record<JobState, string>> = {
  scheduled: 's',
  queued: 'q',
  running: 'r',
  succeeded: 'd',
  dead: 'x',
  cancelled: 'c',
};

const CODE_STATE = new Map<string, JobState>(
  Object.entries(STATE_CODE).map(([state, code]) => [code, state as JobState]),
);

export function decodeState(code: string): JobState {
  const state = CODE_STATE.get(code);
  if (!state) throw new Error(`unknown job state code ${JSON.stringify(code)}`);
  return state;
}
