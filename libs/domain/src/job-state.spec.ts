import {
  IllegalTransitionError,
  JOB_STATES,
  JOB_TRANSITIONS,
  TERMINAL_STATES,
  assertTransition,
  canTransition,
  isJobState,
  type JobState,
} from './job-state';

// The whole table spelled out once more, so any change to it is a deliberate change to this test.
const LEGAL: ReadonlyArray<[JobState, JobState]> = [
  ['scheduled', 'queued'],
  ['scheduled', 'cancelled'],
  ['scheduled', 'scheduled'],
  ['queued', 'running'],
  ['queued', 'scheduled'],
  ['queued', 'queued'],
  ['queued', 'cancelled'],
  ['running', 'succeeded'],
  ['running', 'dead'],
  ['running', 'scheduled'],
  ['running', 'queued'],
  ['dead', 'scheduled'],
  ['dead', 'queued'],
];
const isLegal = (from: JobState, to: JobState) => LEGAL.some(([f, t]) => f === from && t === to);
const ALL_PAIRS = JOB_STATES.flatMap((from) => JOB_STATES.map((to) => [from, to] as [JobState, JobState]));

describe('job states', () => {
  it('has exactly the documented vocabulary, with no persisted failed state', () => {
    expect([...JOB_STATES]).toEqual(['scheduled', 'queued', 'running', 'succeeded', 'dead', 'cancelled']);
    expect(JOB_STATES).not.toContain('failed');
  });

  it('has a table row for every state and only known targets', () => {
    expect(Object.keys(JOB_TRANSITIONS).sort()).toEqual([...JOB_STATES].sort());
    for (const targets of Object.values(JOB_TRANSITIONS)) {
      for (const to of targets) expect(isJobState(to)).toBe(true);
      expect(new Set(targets).size).toBe(targets.length);
    }
  });

  it.each(ALL_PAIRS)('%s → %s matches the table', (from, to) => {
    expect(canTransition(from, to)).toBe(isLegal(from, to));
    if (isLegal(from, to)) {
      expect(() => assertTransition(from, to)).not.toThrow();
    } else {
      expect(() => assertTransition(from, to)).toThrow(IllegalTransitionError);
    }
  });

  it('terminal states have no way out, and are exactly the states without one', () => {
    for (const state of JOB_STATES) {
      expect(TERMINAL_STATES.includes(state)).toBe(JOB_TRANSITIONS[state].length === 0);
    }
    expect([...TERMINAL_STATES].sort()).toEqual(['cancelled', 'succeeded']);
  });

  it('only a worker path reaches running, succeeded and dead', () => {
    const into = (to: JobState) => JOB_STATES.filter((from) => canTransition(from, to));
    expect(into('running')).toEqual(['queued']);
    expect(into('succeeded')).toEqual(['running']);
    expect(into('dead')).toEqual(['running']);
  });

  it('a running job cannot be cancelled (the API answers 409)', () => {
    expect(canTransition('running', 'cancelled')).toBe(false);
  });

  it('every state is reachable from scheduled and queued (a new job starts in one of them)', () => {
    for (const start of ['scheduled', 'queued'] as const) {
      const seen = new Set<JobState>([start]);
      const stack: JobState[] = [start];
      while (stack.length > 0) {
        for (const next of JOB_TRANSITIONS[stack.pop()!]) {
          if (!seen.has(next)) {
            seen.add(next);
            stack.push(next);
          }
        }
      }
      expect([...seen].sort()).toEqual([...JOB_STATES].sort());
    }
  });

  it('the guard error names both states', () => {
    let error: unknown;
    try {
      assertTransition('succeeded', 'queued');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(IllegalTransitionError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'IllegalTransitionError', from: 'succeeded', to: 'queued' });
    expect((error as Error).message).toBe('a job cannot move from succeeded to queued');
  });

  it('isJobState accepts only the vocabulary', () => {
    for (const state of JOB_STATES) expect(isJobState(state)).toBe(true);
    for (const value of ['failed', 'Queued', '', 's', null, undefined, 1, {}]) expect(isJobState(value)).toBe(false);
  });
});
