import { RetentionRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { insertJobs } from '@almanac/testing/promoter-rows';
import { RetentionSweep } from './retention.sweep';
import { createTenants } from '@almanac/testing/tenant-rows';

const DAY = 86_400e3;

/** The tenants' clean-ups (effect records, bulk operations, schedule payloads) spend the run's budget as its job removals do. */
describe('RetentionSweep clean-ups within the run budget (Postgres)', () => {
  let db: TestDatabase;
  let a: number;
  let b: number;
  /** The database's time at the test's start: the sweep judges retention by its clock. */
  let dbNow: Date;
  const at = (ms: number) => new Date(dbNow.getTime() + ms);
  const count = async (table: string, tenantId: number) =>
    (await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [tenantId]))[0].n;

  beforeAll(async () => {
    db = await createTestDatabase();
    [a, b] = await createTenants(db.dataSource, 'a', 'b');
    dbNow = (await db.dataSource.query<{ t: Date }[]>(`SELECT statement_timestamp() AS t`))[0].t;
  });
  afterAll(async () => db.drop());

  it("stops a tenant's clean-up at the run's budget, gives the next tenant its turn, and finishes the clean-up in later runs", async () => {
    await db.dataSource.query(
      `INSERT INTO job_effects (tenant_id, effect_key, job_id, claimed_at, done_at) SELECT $1, 'mail-' || i, 1, $2, $2 FROM generate_series(1, 50000) i`,
      [a, at(-31 * DAY)],
    );
    const ofB = await insertJobs(db.dataSource, { tenantId: b, count: 5, start: at(-40 * DAY), state: 'd' });
    await db.dataSource.query(`UPDATE jobs SET finished_at = run_at WHERE id = ANY($1::bigint[])`, [ofB]);
    expect(a).toBeLessThan(b); // a's turn comes first
    const s = new RetentionSweep(new RetentionRepository(db.dataSource), { defaultSeconds: 30 * 86_400, defaultKeyReservation: 400 * 86_400, batchSize: 1000, maxPerRun: 10_000 });

    // Run 1: a's expired effect records take the whole budget; without it all 50,000 went here, b waiting behind them.
    expect(await s.runOnce(dbNow)).toMatchObject({ removed: 0, more: true });
    expect(await count('job_effects', a)).toBe(40_000);
    expect(await count('jobs', b)).toBe(5);

    // Run 2 starts with b, then a's clean-up goes on (not marked done when cut off) with what is left.
    expect(await s.runOnce(dbNow)).toMatchObject({ removed: 5, more: true });
    expect(await count('jobs', b)).toBe(0);
    expect(await count('job_effects', a)).toBe(30_005);

    let runs = 0;
    while ((await s.runOnce(dbNow)).more) expect(++runs).toBeLessThan(10);
    expect(await count('job_effects', a)).toBe(0);
  });
});
