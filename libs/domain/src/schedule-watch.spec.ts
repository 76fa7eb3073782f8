import { watchedOutcome } from './schedule-watch';

describe('watchedOutcome: a schedule run against its expectation', () => {
  const due = new Date('2026-12-01T01:00:00Z');
  const at = (ms: number) => new Date(due.getTime() + ms);
  it.each([
    ['no job made for it', null, 'missed'],
    ['its job not started by the deadline', { state: 'queued' as const, startedAt: null }, 'missed'],
    ['started within the expectation', { state: 'succeeded' as const, startedAt: at(60_000) }, 'ok'],
    ['started after it', { state: 'succeeded' as const, startedAt: at(60_001) }, 'late'],
    ['its first attempt still running (its start not recorded yet)', { state: 'running' as const, startedAt: null }, 'running'],
    ['a later attempt running, the first started late (it may yet end dead)', { state: 'running' as const, startedAt: at(60_001), attempts: 2 }, 'running'],
    ['an attempt failed, a retry waits (it may yet end dead)', { state: 'scheduled' as const, startedAt: at(5), attempts: 1 }, 'running'],
    ['succeeded after a retry, the first started on time', { state: 'succeeded' as const, startedAt: at(5), attempts: 2 }, 'ok'],
    ['dead', { state: 'dead' as const, startedAt: at(5) }, 'failed'],
    ['cancelled', { state: 'cancelled' as const, startedAt: null }, null],
  ])('%s', (_, run, expected) => {
    expect(watchedOutcome(run, due, 60_000)).toBe(expected);
  });
});

describe('watchedOutcome once a run was held long enough (hold false)', () => {
  const due = new Date('2026-12-01T01:00:00Z');
  it.each([
    ['a retry waits, the first started late', { state: 'queued' as const, startedAt: new Date(due.getTime() + 60_001), attempts: 1 }, 'late'],
    ['its first attempt still running: started, when is unknown', { state: 'running' as const, startedAt: null, attempts: 1 }, 'ok'],
    ['never started', { state: 'queued' as const, startedAt: null, attempts: 0 }, 'missed'],
  ])('%s', (_, run, expected) => {
    expect(watchedOutcome(run, due, 60_000, false)).toBe(expected);
  });
});
