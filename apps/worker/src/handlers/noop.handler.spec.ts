import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { noopHandler } from './noop.handler';

describe('noop', () => {
  it.each(DOUBLE_RUN_MODES)('succeeds once when the job runs twice (%s)', async (mode) => {
    // noop's only effect is its own success: exactly one attempt may be recorded as succeeded.
    await runTwice(noopHandler, null, {
      mode,
      effects: async (h) => (await h.ds.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM job_attempts WHERE outcome = 'succeeded'`))[0].n,
    });
  });
});
