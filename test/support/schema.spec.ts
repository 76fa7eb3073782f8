import { createdAtFromJobId } from '../../libs/persistence/src';
import { createTestDatabase, TestDatabase } from './test-db';

describe('test database support', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('clones a database with the core schema migrated', async () => {
    const rows = await db.dataSource.query(`SELECT to_regclass('jobs') AS jobs, to_regclass('jobs_cold_due') AS idx`);
    expect(rows[0]).toEqual({ jobs: 'jobs', idx: 'jobs_cold_due' });
  });

  it('makes time-ordered job ids that carry the creation time', async () => {
    const [{ id, now }] = await db.dataSource.query(`SELECT almanac_job_id()::text AS id, now() AS now`);
    expect(Math.abs(createdAtFromJobId(id).getTime() - new Date(now).getTime())).toBeLessThan(5000);
  });
});
