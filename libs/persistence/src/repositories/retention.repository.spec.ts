import { utcDay } from '@almanac/domain';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { RetentionRepository } from './retention.repository';
import { TenantsRepository } from './tenants.repository';

const DAY = 86_400e3;

/** RetentionRepository's statements against each other and against ingest, on the real Postgres. */
describe('RetentionRepository (Postgres)', () => {
  let db: TestDatabase;
  let repo: RetentionRepository;
  let a: number;
  /** The database's time: the retired-key trigger judges days by it. */
  let now: Date;

  beforeAll(async () => {
    db = await createTestDatabase();
    repo = new RetentionRepository(db.dataSource);
    a = (await new TenantsRepository(db.dataSource).create('a')).tenant.id;
  });
  beforeEach(async () => {
    await db.dataSource.query('TRUNCATE jobs, job_attempts, retired_keys');
    now = (await db.dataSource.query<{ t: Date }[]>(`SELECT statement_timestamp() AS t`))[0].t;
  });
  afterAll(async () => db.drop());

  it("does not free a key whose reservation a removal renewed while the freeing waited for the row: a replay would make a second job", async () => {
    const day = (days: number) => utcDay(new Date(now.getTime() + days * DAY));
    // The key's reservation ended ten days ago, so it named a new job, which has expired in turn.
    await db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through) VALUES ($1, 'inv:7', $2, 'd', $3)`, [a, day(-410), day(-10)]);
    const at = new Date(now.getTime() - 40 * DAY);
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at) VALUES ($1, 'inv:7', 'noop', $2, 'd', $2)`, [a, at]);
    const policy = (await repo.policies(30 * 86_400, 400 * 86_400))[0];

    const removal = db.dataSource.createQueryRunner();
    await removal.startTransaction();
    try {
      expect((await repo.removeExpired(policy, new Date(now.getTime() - 30 * DAY), 10, day(0), removal.manager)).removed).toBe(1);
      // The freeing chose the row by its old reservation and waits for the removal's upsert of it.
      const freeing = repo.removeExpiredKeys(day(0), 10);
      await someoneWaitsOnALock(db.dataSource);
      await removal.commitTransaction();
      expect(await freeing).toBe(0);
    } finally {
      if (removal.isTransactionActive) await removal.rollbackTransaction();
      await removal.release();
    }
    const rows = await db.dataSource.query(`SELECT to_char(reserved_through, 'YYYY-MM-DD') AS through FROM retired_keys WHERE key = 'inv:7'`);
    expect(rows).toEqual([{ through: day(400) }]);
  });

  it('retires keys by the tenant\'s row at each batch, not by the policy read at the run\'s start: a switch to reserved mid-run freed the rest of the run\'s keys (review)', async () => {
    const tenants = new TenantsRepository(db.dataSource);
    const day = (days: number) => utcDay(new Date(now.getTime() + days * DAY));
    const at = new Date(now.getTime() - 40 * DAY);
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at) SELECT $1, 'mid:' || g, 'noop', $2, 'd', $2 FROM generate_series(1, 4) g`, [a, at]);
    try {
      await tenants.updateRetention(a, { keysAfterRetention: 'freed' });
      const read = (await repo.policies(30 * 86_400, 400 * 86_400))[0]; // the run's start
      expect((await repo.removeExpired(read, new Date(now.getTime() - 30 * DAY), 2, day(0))).removed).toBe(2);
      await tenants.updateRetention(a, { keysAfterRetention: 'reserved', keyReservationSeconds: 'forever' }); // the admin, mid-run
      expect((await repo.removeExpired(read, new Date(now.getTime() - 30 * DAY), 2, day(0))).removed).toBe(2);
      const kept = await db.dataSource.query(`SELECT key, reserved_through FROM retired_keys WHERE tenant_id = $1 ORDER BY key`, [a]);
      expect(kept).toHaveLength(2); // the two removed after the switch, reserved for good
      expect(kept.every((k: { reserved_through: unknown }) => k.reserved_through === null)).toBe(true);
    } finally {
      await tenants.updateRetention(a, { keysAfterRetention: 'reserved', keyReservationSeconds: 400 * 86_400 });
    }
  });

  it("measures the oldest expired row from where the walk got to: it reads about one row, not the backlog the walk passed", async () => {
    // A backlog held back by a limit (queued, due long ago) below the tenant's expired rows.
    const rows = (state: string, n: number, daysAgo: number) =>
      db.dataSource.query(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at)
         SELECT $1, $2 || g, 'noop', $3::timestamptz + g * interval '1 second', $4::"char", CASE WHEN $4 = 'd' THEN $3::timestamptz + g * interval '1 second' END
           FROM generate_series(1, $5) g`,
        [a, `${state}-`, new Date(now.getTime() - daysAgo * DAY), state, n],
      );
    await rows('q', 5000, 50);
    await rows('d', 20, 40);
    await db.dataSource.query('ANALYZE jobs');
    const from = (await db.dataSource.query<{ t: Date }[]>(`SELECT min(run_at) AS t FROM jobs WHERE state = 'd'`))[0].t;
    const q = db.dataSource.createQueryRunner();
    await q.startTransaction();
    // A delta: the backend's counts not yet flushed show too.
    const read = async () =>
      (await q.query(`SELECT (seq_tup_read + coalesce(idx_tup_fetch, 0))::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'jobs'`))[0].n as number;
    try {
      const before = await read();
      expect(await repo.oldestExpired(a, new Date(now.getTime() - 30 * DAY), [], from, q.manager)).toEqual(from);
      expect((await read()) - before).toBeLessThan(10);
    } finally {
      await q.rollbackTransaction();
      await q.release();
    }
  });
});
