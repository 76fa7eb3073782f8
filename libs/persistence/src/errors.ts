import type { JobState } from '@almanac/domain';

/** A guarded update found no row in the expected state: someone else moved it first. */
export class StaleStateError extends Error {
  override readonly name = 'StaleStateError';
  constructor(
    readonly jobId: string,
    readonly expected: JobState,
  ) {
    super(`job ${jobId} is no longer ${expected}`);
  }
}
