import { utcDay } from '@almanac/domain';
import { JobsRepository, RetentionRepository, TenantsRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { insertJobs } from '@almanac/testing/promoter-rows';
import { RetentionSweep } from './retention.sweep';

const DAY = 86_400e3;

/**
 * The sweep's days and cutoff against the database's clock, with `now` (the promoter host's
 * clock) days off it: ingest's check of reserved keys judges by the database's day.
 */
describe('RetentionSweep by the database clock (Postgres)', () => {
  let db: TestDatabase;
  let a: number;
  /** The database's time at each test's start. */
  let dbNow: Date;
  const at = (ms: number) => new Date(dbNow.getTime() + ms);
  const dayAt = (days: number) => utcDay(at(days * DAY));
  const sweep = () =>
    new RetentionSweep(new RetentionRepository(db.dataSource), { defaultSeconds: 30 * 86_400, defaultKeyReservation: 400 * 86_400, batchSize: 1000, maxPerRun: 100_000 });
  const finished = async (daysAgo: number, prefix: string) => {
    const ids = await insertJobs(db.dataSource, { tenantId: a, count: 1, start: at(-daysAgo * DAY), state: 'd', prefix });
    await db.dataSource.query(`UPDATE jobs SET finished_at = run_at WHERE id = ANY($1::bigint[])`, [ids]);
    return (await db.dataSource.query<{ key: string }[]>(`SELECT key FROM jobs WHERE id = $1`, [ids[0]]))[0].key;
  };
  const retired = async () =>
    Object.fromEntries(
      (
        await db.dataSource.query<{ key: string; on: string; through: string }[]>(
          `SELECT key, to_char(removed_on, 'YYYY-MM-DD') AS on, to_char(reserved_through, 'YYYY-MM-DD') AS through FROM retired_keys`,
        )
      ).map((r) => [r.key, [r.on, r.through]]),
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    a = (await new TenantsRepository(db.dataSource).create('a')).tenant.id;
  });
  beforeEach(async () => {
    await db.dataSource.query('TRUNCATE jobs, job_attempts, retired_keys');
    dbNow = (await db.dataSource.query<{ t: Date }[]>(`SELECT statement_timestamp() AS t`))[0].t;
  });
  afterAll(async () => db.drop());

  it("removes jobs and reserves their keys by the database's day, the host's clock days behind or ahead", async () => {
    const old = await finished(40, 'old');
    const young = await finished(27, 'young'); // within the 30 days by the database's clock
    // A host five days behind: the removal day and the reservation's last are still the database's.
    expect((await sweep().runOnce(at(-5 * DAY))).removed).toBe(1);
    expect(await retired()).toEqual({ [old]: [dayAt(0), dayAt(400)] });
    // A host five days ahead removes nothing early.
    expect((await sweep().runOnce(at(5 * DAY))).removed).toBe(0);
    expect(await retired()).not.toHaveProperty(young);
  });

  it("frees a key a day after its last by the database's day, the host's clock days behind or ahead", async () => {
    const reserve = (key: string, lastDay: number) =>
      db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through) VALUES ($1, $2, $3, 'd', $4)`, [a, key, dayAt(lastDay - 400), dayAt(lastDay)]);
    await reserve('ends-today', 0);
    await reserve('ended-yesterday', -1);
    await reserve('ended-before', -2);
    await sweep().runOnce(at(-3 * DAY)); // a host behind frees what the database's day has ended
    expect(Object.keys(await retired()).sort()).toEqual(['ended-yesterday', 'ends-today']);
    await sweep().runOnce(at(3 * DAY)); // a host ahead frees nothing still reserved
    expect(Object.keys(await retired()).sort()).toEqual(['ended-yesterday', 'ends-today']);
    const replay = await new JobsRepository(db.dataSource).insertBatch(a, [{ kind: 'noop', key: 'ends-today', runAt: dbNow, state: 'scheduled' }]);
    expect(replay[0]).toMatchObject({ status: 'retired', reservedThrough: dayAt(0) });
  });
});
