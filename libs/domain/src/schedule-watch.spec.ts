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
    ['a later attempt running, the first started late', { state: 'running' as const, startedAt: at(60_001) }, 'late'],
    ['dead', { state: 'dead' as const, startedAt: at(5) }, 'failed'],
    ['cancelled', { state: 'cancelled' as const, startedAt: null }, null],
  ])('%s', (_, run, expected) => {
    expect(watchedOutcome(run, due, 60_000)).toBe(expected);
  });
});
