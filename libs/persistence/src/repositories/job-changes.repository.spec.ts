import { Client } from 'pg';
import { insertJob } from '@almanac/testing/job-rows';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import type { DataSource } from 'typeorm';
import { RETRY_DEAD_JOB_SQL } from '../statements/retry-dead-job.sql';
import { JobChangesRepository } from './job-changes.repository';

const H = 3600_000;
const T0 = Date.parse('2026-12-01T00:00:00Z');

describe('JobChangesRepository', () => {
  let db: TestDatabase;
  let repo: JobChangesRepository;

  beforeAll(async () => {
    db = await createTestDatabase(1);
    repo = new JobChangesRepository(db.dataSource);
  });
  afterAll(() => db.drop());

  beforeEach(() => db.dataSource.query('TRUNCATE jobs'));

  const insert = (tenant: number, key: string, runAtMs: number, state: string, kind?: string) =>
    insertJob(db.dataSource, tenant, key, runAtMs, state, kind);

  it('cancels scheduled/queued rows with a guarded update, and refuses running ones', async () => {
    const q = await insert(1, 'q', T0, 'q');
    const r = await insert(1, 'r', T0, 'r');
    expect(await repo.cancel(1, q)).toMatchObject({ outcome: 'cancelled', previous: 'queued', job: { state: 'cancelled' } });
    expect(await repo.cancel(1, q)).toMatchObject({ outcome: 'already_cancelled' });
    expect(await repo.cancel(1, r)).toEqual({ outcome: 'conflict', state: 'running' });
    expect(await repo.cancel(2, r)).toEqual({ outcome: 'not_found' });
  });

  it('races the dispatcher safely: whoever updates the row first wins, the other sees the new state', async () => {
    const id = await insert(1, 'race', T0, 'q');
    const dispatcher = new Client({ connectionString: db.url });
    await dispatcher.connect();
    try {
      await dispatcher.query('BEGIN');
      expect((await dispatcher.query(`UPDATE jobs SET state = 'r' WHERE id = $1 AND state = 'q'`, [id])).rowCount).toBe(1);
      const cancel = repo.cancel(1, id); // waits on the row lock
      const reschedule = repo.reschedule(1, id, new Date(T0 + H), 'queued');
      await dispatcher.query('COMMIT');
      expect(await cancel).toEqual({ outcome: 'conflict', state: 'running' });
      expect(await reschedule).toEqual({ outcome: 'conflict', state: 'running' });
      // The other way round: the API's cancel commits first, the dispatcher's guarded claim finds nothing.
      const id2 = await insert(1, 'race-2', T0, 'q');
      expect(await repo.cancel(1, id2)).toMatchObject({ outcome: 'cancelled' });
      expect((await dispatcher.query(`UPDATE jobs SET state = 'r' WHERE id = $1 AND state = 'q'`, [id2])).rowCount).toBe(0);
    } finally {
      await dispatcher.end();
    }
  });

  it('reschedules, retries dead jobs by raising max_attempts, demotes queued rows', async () => {
    const s = await insert(1, 's', T0, 's');
    const res = await repo.reschedule(1, s, new Date(T0 + 5 * H), 'queued');
    expect(res).toMatchObject({ outcome: 'rescheduled', previous: 'scheduled', job: { state: 'queued' } });
    expect(await repo.demoteToScheduled([{ id: s, runAt: new Date(T0) }])).toBe(0); // run time moved: guard holds
    expect(await repo.demoteToScheduled([{ id: s, runAt: new Date(T0 + 5 * H) }])).toBe(1);
    const x = await insert(1, 'x', T0, 'x');
    await db.dataSource.query(`UPDATE jobs SET attempts = 3, max_attempts = 3 WHERE id = $1`, [x]);
    expect(await repo.retryDead(1, x, new Date(T0), 'scheduled', 2)).toMatchObject({
      outcome: 'rescheduled',
      job: { state: 'scheduled', attempts: 3, maxAttempts: 5 },
    });
    expect(await repo.retryDead(1, x, new Date(T0), 'scheduled', 2)).toEqual({ outcome: 'conflict', state: 'scheduled' });
  });

  it('a retry "now" stores a run time a hint carries exactly: its row can be demoted when the enqueue fails (microseconds made the guard miss)', async () => {
    const x = await insert(1, 'x-now', T0, 'x');
    await db.dataSource.query(`UPDATE jobs SET attempts = 1, max_attempts = 1 WHERE id = $1`, [x]);
    const retried = await repo.retryDead(1, x, null, 'queued', 1);
    if (retried.outcome !== 'rescheduled') throw new Error(`not retried: ${retried.outcome}`);
    expect(await repo.demoteToScheduled([{ id: x, runAt: new Date(retried.job.runAt) }])).toBe(1);
  });

  it('a retry whose job dies (again) between its statement and its read-back is tried again, not refused as past the attempt limit', async () => {
    const id = await insert(1, 'x-race', T0, 'q'); // not dead when the statement looks
    let died = false;
    // Real Postgres; the job fails its run just after the retry's statement (another retry raced it).
    const racing = new JobChangesRepository({
      query: async (sql: string, params: unknown[]) => {
        const out: unknown = await db.dataSource.query(sql, params);
        if (sql === RETRY_DEAD_JOB_SQL && !died) {
          died = true;
          await db.dataSource.query(`UPDATE jobs SET state = 'x', attempts = 1, max_attempts = 1 WHERE id = $1`, [id]);
        }
        return out;
      },
    } as unknown as DataSource);
    expect(await racing.retryDead(1, id, new Date(T0), 'scheduled', 2)).toMatchObject({ outcome: 'rescheduled', job: { state: 'scheduled', maxAttempts: 3 } });
    const limit = await insert(1, 'x-limit', T0, 'x');
    await db.dataSource.query(`UPDATE jobs SET attempts = 9999, max_attempts = 9999 WHERE id = $1`, [limit]);
    expect(await repo.retryDead(1, limit, new Date(T0), 'scheduled', 2)).toEqual({ outcome: 'attempt_limit', attempts: 9999 });
  });
});
