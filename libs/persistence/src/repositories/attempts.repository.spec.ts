import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
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
    if (o.status === 'retired') throw new Error('a new key cannot be retired');
    jobId = o.job.id;
  });
  afterAll(async () => db.drop());

  it('lists attempts oldest first', async () => {
    // Inserted newest first, so the order has to come from the query.
    await db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, worker_id, error, result)
       VALUES ($1, 1, 2, $4, $5, 'succeeded', 'w1', NULL, '{"sent":3}'),
              ($1, 1, 1, $2, $3, 'failed', 'w1', 'boom', NULL)`,
      [jobId, at(0), at(1), at(10), at(11)],
    );
    expect(await attempts.listForJob(1, jobId, { limit: 10 })).toEqual([
      { jobId, tenantId: 1, attempt: 2, startedAt: at(10), finishedAt: at(11), outcome: 'succeeded', workerId: 'w1', error: null, result: { sent: 3 } },
      { jobId, tenantId: 1, attempt: 1, startedAt: at(0), finishedAt: at(1), outcome: 'failed', workerId: 'w1', error: 'boom', result: null },
    ]);
    expect((await attempts.listForJob(1, jobId, { limit: 1 })).map((a) => a.attempt)).toEqual([2]); // newest first
    expect((await attempts.listForJob(1, jobId, { before: 2, limit: 10 })).map((a) => a.attempt)).toEqual([1]);
  });

  it('hides attempts from another tenant and tolerates bad ids', async () => {
    expect(await attempts.listForJob(2, jobId, { limit: 10 })).toEqual([]);
    expect(await attempts.listForJob(1, 'x', { limit: 10 })).toEqual([]);
  });
});
