import { completed, DEFAULT_HORIZONS, DEFAULT_RETRY_POLICY, discard, MAX_ERROR_LENGTH, MAX_LIFETIME_ATTEMPTS, retry, snooze } from '@almanac/domain';
import { InvalidPayloadError } from '@almanac/kinds';
import type { RunnableJob } from '@almanac/persistence';
import { attemptRecord } from './attempt-record';

describe('attemptRecord', () => {
  const now = new Date('2026-11-30T09:00:00.000Z');
  const startedAt = new Date(now.getTime() - 40);
  const c = { startedAt, now, workerId: 'w-1', horizons: DEFAULT_HORIZONS, retryPolicy: DEFAULT_RETRY_POLICY };
  const row = (attempt: number, maxAttempts = 3): RunnableJob => ({ id: '7', tenantId: 2, kind: 'k', key: 'a', payload: null, attempt, maxAttempts, traceParent: null });
  const base = { id: '7', attempt: 1, tenantId: 2, startedAt, finishedAt: now, workerId: 'w-1' };

  it('completed → succeeded, with its result', () => {
    expect(attemptRecord(row(1), completed({ n: 1 }), undefined, c)).toEqual({ ...base, next: 'succeeded', outcome: 'succeeded', result: { n: 1 }, error: null });
  });

  it('discard, or an invalid payload → dead at once, whatever attempts are left', () => {
    expect(attemptRecord(row(1), discard('bad address'), undefined, c)).toMatchObject({ next: 'dead', outcome: 'discarded', error: 'bad address' });
    const invalid = attemptRecord(row(1), undefined, new InvalidPayloadError('to: must be an email'), c);
    expect(invalid).toMatchObject({ next: 'dead', outcome: 'discarded', error: 'InvalidPayloadError: to: must be an email' });
  });

  it('retry, or an exception → the handler delay or the backoff, and dead on the last attempt', () => {
    expect(attemptRecord(row(1), retry({ delayMs: 3_600_000, reason: 'rate limited' }), undefined, c)).toMatchObject({
      next: 'queued', runAt: new Date(now.getTime() + 3_600_000), outcome: 'failed', error: 'rate limited',
    });
    expect(attemptRecord(row(1), retry({ delayMs: 3 * 86_400_000 }), undefined, c)).toMatchObject({ next: 'scheduled', error: 'retry requested' });
    const thrown = attemptRecord(row(2), undefined, new Error('x'.repeat(5000)), c);
    expect(thrown).toMatchObject({ next: 'queued', outcome: 'failed' });
    expect(thrown.error).toHaveLength(MAX_ERROR_LENGTH);
    expect(attemptRecord(row(3), retry({ reason: 'still 503' }), undefined, c)).toMatchObject({ next: 'dead', outcome: 'failed', error: 'still 503' });
  });

  it('snooze → back after its delay as `snoozed`, on the last attempt too, and `failed` past the lifetime bound', () => {
    expect(attemptRecord(row(3), snooze({ delayMs: 30_000, reason: 'held by another run' }), undefined, c)).toEqual({
      ...base, attempt: 3, next: 'queued', runAt: new Date(now.getTime() + 30_000), outcome: 'snoozed', error: 'held by another run',
    });
    const worn = row(MAX_LIFETIME_ATTEMPTS, MAX_LIFETIME_ATTEMPTS);
    expect(attemptRecord(worn, snooze({ delayMs: 30_000 }), undefined, c)).toMatchObject({ next: 'dead', outcome: 'failed', error: 'snoozed' });
  });
});
