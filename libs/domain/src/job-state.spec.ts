import { JOB_STATES, isJobState } from './job-state';

describe('job states', () => {
  it('has exactly the documented vocabulary, with no persisted failed state', () => {
    expect([...JOB_STATES]).toEqual(['scheduled', 'queued', 'running', 'succeeded', 'dead', 'cancelled']);
    expect(JOB_STATES).not.toContain('failed');
  });

  it('isJobState accepts only the vocabulary', () => {
    for (const state of JOB_STATES) expect(isJobState(state)).toBe(true);
    for (const value of ['failed', 'Queued', '', 's', null, undefined, 1, {}]) expect(isJobState(value)).toBe(false);
  });
});
