import { sqlStateOf, within } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { type InsertOutcome, JobsRepository, type NewJob, type TenantJob } from './jobs.repository';
import { TenantsRepository } from './tenants.repository';
import { createTenants } from '@almanac/testing/tenant-rows';

const RUN_AT = new Date('2026-12-08T09:00:00Z');
const job = (key: string, payload: unknown = null): NewJob => ({ kind: 'noop', key, runAt: RUN_AT, payload, state: 'scheduled' });
/** The text of every statement the database's pooled connections run from now on. */
function recordStatements(db: TestDatabase): string[] {
  const seen: string[] = [];
  const create = db.dataSource.createQueryRunner.bind(db.dataSource);
  jest.spyOn(db.dataSource, 'createQueryRunner').mockImplementation((...args) => {
    const runner = create(...args);
    const query = runner.query.bind(runner);
    runner.query = (q: unknown, ...rest: unknown[]) => (seen.push(typeof q === 'string' ? q : (q as { text: string }).text), query(q as string, ...(rest as [])));
    return runner;
  });
  return seen;
}
const summary = (out: InsertOutcome[]) => out.map((o) => (o.status === 'retired' ? ['retired', o.key] : [o.status, o.job.tenantId, o.job.key, o.job.payload]));

/** Several tenants' jobs in one statement (the API's group commit of single POSTs). */
describe('JobsRepository.insertMany (Postgres)', () => {
  let db: TestDatabase;
  let jobs: JobsRepository;
  let a: number;
  let b: number;

  beforeAll(async () => {
    db = await createTestDatabase(2);
    jobs = new JobsRepository(db.dataSource);
    [a, b] = await createTenants(db.dataSource, 'a', 'b');
  });
  let defaultLockTimeout: string;
  beforeAll(async () => {
    [{ v: defaultLockTimeout }] = await db.dataSource.query(`SELECT current_setting('lock_timeout') AS v`);
  });
  beforeEach(() => db.dataSource.query('TRUNCATE jobs, retired_keys'));
  afterEach(() => jest.restoreAllMocks());
  afterAll(() => db.drop());

  it("keeps each tenant's keys its own: the same key is two jobs, a repeat is the first of its own tenant's", async () => {
    const items: TenantJob[] = [
      { tenantId: b, job: job('k1', 'b1') },
      { tenantId: a, job: job('k1', 'a1') },
      { tenantId: b, job: job('k1', 'b2') },
      { tenantId: a, job: job('k2', 'a2') },
    ];
    const out = await jobs.insertMany(items);
    expect(summary(out)).toEqual([
      ['created', b, 'k1', 'b1'],
      ['created', a, 'k1', 'a1'],
      ['existing', b, 'k1', 'b1'],
      ['created', a, 'k2', 'a2'],
    ]);
    const rows = await db.dataSource.query(`SELECT id::text AS id, tenant_id, key, payload::text AS payload FROM jobs ORDER BY tenant_id, key`);
    expect(rows.map((r: { tenant_id: number; key: string; payload: string }) => [r.tenant_id, r.key, JSON.parse(r.payload)])).toEqual([
      [a, 'k1', 'a1'],
      [a, 'k2', 'a2'],
      [b, 'k1', 'b1'],
    ]);
    // Each created outcome names its own row.
    for (const o of out) if (o.status === 'created') expect(rows.find((r: { id: string }) => r.id === o.job.id)).toMatchObject({ tenant_id: o.job.tenantId, key: o.job.key });
  });

  it("answers a key one tenant already has as existing, with that tenant's row, and creates the others'", async () => {
    await jobs.insertBatch(a, [job('k1', 'old')]);
    const out = await jobs.insertMany([
      { tenantId: a, job: job('k1', 'new') },
      { tenantId: b, job: job('k1', 'b') },
      { tenantId: a, job: job('k0', 'a0') },
    ]);
    expect(summary(out)).toEqual([
      ['existing', a, 'k1', 'old'],
      ['created', b, 'k1', 'b'],
      ['created', a, 'k0', 'a0'],
    ]);
  });

  it('asks about the retired keys of several tenants in one statement, not one a tenant', async () => {
    const c = (await new TenantsRepository(db.dataSource).create('c')).tenant.id;
    for (const [tenant, key] of [[a, 'gone-a'], [b, 'gone-b']] as const) {
      await db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) VALUES ($1, $2, '2026-11-02', 'd')`, [tenant, key]);
    }
    const statements = recordStatements(db);
    const out = await jobs.insertMany([
      { tenantId: a, job: job('gone-a') },
      { tenantId: b, job: job('gone-b') },
      { tenantId: c, job: job('fresh') },
      { tenantId: a, job: job('gone-b') },
    ]);
    expect(out.map((o) => o.status)).toEqual(['retired', 'retired', 'created', 'created']);
    expect(statements.filter((q) => q.includes('retired_keys'))).toHaveLength(1);
  });

  it('with lockTimeoutMs, fails (55P03) past it on a key another transaction holds uncommitted, writing nothing, and leaves the session as it was', async () => {
    const holder = db.dataSource.createQueryRunner();
    await holder.startTransaction();
    try {
      await holder.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, 'held', 'noop', now(), 's')`, [a]);
      const insert = jobs.insertMany([{ tenantId: a, job: job('held') }, { tenantId: b, job: job('beside') }], undefined, undefined, { lockTimeoutMs: 100 });
      // Unbounded, it would wait for the holder's transaction.
      const err = await within(2000, insert, 'the bounded insert').catch((e: unknown) => e);
      expect(sqlStateOf(err)).toBe('55P03');
    } finally {
      await holder.rollbackTransaction();
      await holder.release();
    }
    expect(await db.dataSource.query(`SELECT key FROM jobs`)).toEqual([]);
    // Both pooled connections: the bound was the statement's only.
    const settings = await Promise.all([0, 1].map(() => db.dataSource.query(`SELECT current_setting('lock_timeout') AS v, pg_sleep(0.01)`)));
    expect(settings.map(([r]: { v: string }[]) => r.v)).toEqual([defaultLockTimeout, defaultLockTimeout]);
  });

  it("refuses a key reserved for one tenant only for that tenant, beside the others' in the same statement", async () => {
    await db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) VALUES ($1, 'gone', '2026-11-02', 'd')`, [a]);
    const out = await jobs.insertMany([
      { tenantId: a, job: job('gone') },
      { tenantId: b, job: job('gone') },
      { tenantId: a, job: job('fresh') },
    ]);
    expect(out.map((o) => o.status)).toEqual(['retired', 'created', 'created']);
    expect(await db.dataSource.query(`SELECT tenant_id, key FROM jobs ORDER BY tenant_id, key`)).toEqual([
      { tenant_id: a, key: 'fresh' },
      { tenant_id: b, key: 'gone' },
    ]);
  });
});
