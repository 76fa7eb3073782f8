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

  it('hands out job id sequence values in one global order, so ids of one millisecond cannot repeat below 4,096', async () => {
    // With a per-session sequence cache, two sessions drew values far apart and, 4,096 apart in
    // the same millisecond, made the same id (a duplicate-key failure in CI).
    const [a, b] = [db.dataSource.createQueryRunner(), db.dataSource.createQueryRunner()];
    try {
      await a.connect();
      await b.connect();
      const [{ v: first }] = await a.query(`SELECT nextval('almanac_job_id_seq')::int AS v`);
      const [{ v: second }] = await b.query(`SELECT nextval('almanac_job_id_seq')::int AS v`);
      const [{ v: third }] = await a.query(`SELECT nextval('almanac_job_id_seq')::int AS v`);
      expect([second - first, third - second]).toEqual([1, 1]);
    } finally {
      await a.release();
      await b.release();
    }
  });

  it('makes time-ordered job ids that carry the creation time', async () => {
    const [{ id, now }] = await db.dataSource.query(`SELECT almanac_job_id()::text AS id, now() AS now`);
    expect(Math.abs(createdAtFromJobId(id).getTime() - new Date(now).getTime())).toBeLessThan(5000);
  });
});
