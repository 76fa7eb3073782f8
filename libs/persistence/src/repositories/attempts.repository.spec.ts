import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-db';
import { JobAttemptEntity } from '../entities';
import { AttemptsRepository } from './attempts.repository';
import { JobsRepository } from './jobs.repository';

const T = new Date('2026-11-29T10:00:00Z');
const at = (s: number) => new Date(T.getTime() + s * 1000);

describe('AttemptsRepository (Postgres)', () => {
  let db: TestDatabase;
  let attempts: AttemptsRepository;
  let jobId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    attempts = new AttemptsRepository(db.dataSource);
    const [o] = await new JobsRepository(db.dataSource).insertBatch(1, [{ kind: 'noop', key: 'k', runAt: T, state: 'queued' }]);
    jobId = o.job.id;
  });
  afterAll(async () => db.drop());

  it('starts, finishes once and lists attempts oldest first', async () => {
    await attempts.start({ jobId, tenantId: 1, attempt: 1, startedAt: at(0), workerId: 'w1' });
    await attempts.start({ jobId, tenantId: 1, attempt: 1, startedAt: at(5), workerId: 'w2' }); // redelivery: no-op
    expect(await attempts.finish({ jobId, attempt: 1, finishedAt: at(1), outcome: 'failed', error: 'boom' })).toBe(true);
    expect(await attempts.finish({ jobId, attempt: 1, finishedAt: at(2), outcome: 'succeeded' })).toBe(false);
    await attempts.start({ jobId, tenantId: 1, attempt: 2, startedAt: at(10), workerId: 'w1' });
    expect(await attempts.finish({ jobId, attempt: 2, finishedAt: at(11), outcome: 'succeeded', result: { sent: 3 } })).toBe(true);
    expect(await attempts.listForJob(1, jobId)).toEqual([
      { jobId, tenantId: 1, attempt: 1, startedAt: at(0), finishedAt: at(1), outcome: 'failed', workerId: 'w1', error: 'boom', result: null },
      { jobId, tenantId: 1, attempt: 2, startedAt: at(10), finishedAt: at(11), outcome: 'succeeded', workerId: 'w1', error: null, result: { sent: 3 } },
    ]);
  });

  it('hides attempts from another tenant and tolerates bad ids', async () => {
    expect(await attempts.listForJob(2, jobId)).toEqual([]);
    expect(await attempts.listForJob(1, 'x')).toEqual([]);
    expect(await attempts.finish({ jobId: 'x', attempt: 1, finishedAt: T, outcome: 'lost' })).toBe(false);
  });

  it('records many starts and finishes in one call, never overwriting a finished attempt', async () => {
    await attempts.recordMany([
      { jobId: '100', tenantId: 1, attempt: 1, startedAt: at(0) },
      { jobId: '101', tenantId: 1, attempt: 1, startedAt: at(0), finishedAt: at(3), outcome: 'succeeded' },
      { jobId: '100', tenantId: 1, attempt: 1, startedAt: at(0), finishedAt: at(2), outcome: 'discarded', error: 'bad input' },
    ]);
    await attempts.recordMany([{ jobId: '100', tenantId: 1, attempt: 1, startedAt: at(0), finishedAt: at(9), outcome: 'lost' }]);
    const [a100] = await attempts.listForJob(1, '100');
    expect(a100).toMatchObject({ outcome: 'discarded', error: 'bad input', finishedAt: at(2) });
    expect((await attempts.listForJob(1, '101'))[0]).toMatchObject({ outcome: 'succeeded' });
    const typed = await db.dataSource.getRepository(JobAttemptEntity).findBy({ jobId: '101' });
    expect(typed).toHaveLength(1);
  });
});
