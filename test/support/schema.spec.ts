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

  it('makes job ids whose low bits do not count the ids drawn between them, and never repeat', async () => {
    // Plain, the low 12 bits were the shared sequence: a tenant's two ids differed by the jobs
    // every tenant created between them. 300 ids one statement each: consecutive sequence values.
    const ids: bigint[] = [];
    for (let i = 0; i < 300; i++) ids.push(BigInt((await db.dataSource.query(`SELECT almanac_job_id()::text AS id`))[0].id));
    const steps = ids.slice(1).map((id, i) => (id - ids[i]) & 4095n);
    expect(steps.filter((s) => s === 1n).length).toBeLessThan(30);
    const [{ n, distinct }] = await db.dataSource.query(`SELECT count(*)::int AS n, count(DISTINCT id)::int AS distinct FROM (SELECT almanac_job_id() AS id FROM generate_series(1, 50000)) s`);
    expect(distinct).toBe(n);
  });

  it('makes time-ordered job ids that carry the creation time', async () => {
    const [{ id, now }] = await db.dataSource.query(`SELECT almanac_job_id()::text AS id, now() AS now`);
    expect(Math.abs(createdAtFromJobId(id).getTime() - new Date(now).getTime())).toBeLessThan(5000);
  });
});
