import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { RetiredKeyRanges1764400080000 } from '../migrations/1764400080000-retired-key-ranges';
import { JobsRepository, type NewJob } from './jobs.repository';
import { TenantsRepository } from './tenants.repository';

const RUN_AT = new Date('2026-12-04T09:00:00Z');
const job = (key: string): NewJob => ({ kind: 'noop', key, runAt: RUN_AT, payload: null, state: 'scheduled' });
const day = (d: string, n: number) => Array.from({ length: n }, (_, i) => `inv:2026-${d}:${i}`);

/**
 * The jobs_refuse_retired_keys trigger (migration 1764400080000) through insertBatch: a batch
 * whose keys lie outside every range of its tenant's retired keys is not looked up; one that
 * meets a range is, and its retired keys are refused while the rest are created.
 */
describe('reserved keys at insert (Postgres)', () => {
  let db: TestDatabase;
  let jobs: JobsRepository;
  let a: number;
  let b: number;

  /** What the retention sweep leaves: each key's hash, and one range over them (disjoint from the tenant's others). */
  const retire = (tenantId: number, keys: string[], hi: string | null = [...keys].sort().at(-1)!) =>
    db.dataSource.query(
      `WITH k AS (INSERT INTO retired_keys (key_hash, removed_on, state) SELECT hashtextextended(k, $1), '2026-11-02', 'd' FROM unnest($2::text[]) k)
       INSERT INTO retired_key_ranges (tenant_id, lo, hi) VALUES ($1, $3, $4)`,
      [tenantId, keys, [...keys].sort()[0], hi],
    );
  const statuses = async (tenantId: number, keys: string[]) =>
    Object.fromEntries((await jobs.insertBatch(tenantId, keys.map(job))).map((o, i) => [keys[i], o.status]));
  /** How often an insert of these keys looked into retired_keys (the insert is rolled back). */
  async function lookups(tenantId: number, keys: string[]): Promise<number> {
    const q = db.dataSource.createQueryRunner();
    await q.startTransaction();
    try {
      await q.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT $1, k, 'noop', now(), 's' FROM unnest($2::text[]) k`, [tenantId, keys]);
      return (await q.query(`SELECT coalesce(sum(seq_scan + idx_scan), 0)::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'retired_keys'`))[0].n;
    } finally {
      await q.rollbackTransaction();
      await q.release();
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase(2);
    jobs = new JobsRepository(db.dataSource);
    const tenants = new TenantsRepository(db.dataSource);
    a = (await tenants.create('a')).tenant.id;
    b = (await tenants.create('b')).tenant.id;
    // Three days of a's invoices removed, with a day between each two still kept.
    for (const d of ['11-01', '11-03', '11-05']) await retire(a, day(d, 100));
  });
  beforeEach(() => db.dataSource.query('TRUNCATE jobs'));
  afterAll(() => db.drop());

  it("does not look up a batch whose keys lie outside the tenant's retired ranges", async () => {
    expect(await lookups(a, ['inv:2026-12-03:1', 'inv:2026-12-03:2'])).toBe(0); // after them all
    expect(await lookups(a, ['inv:2026-10-31:1'])).toBe(0); // before them all
    expect(await lookups(a, ['inv:2026-11-02:1', 'inv:2026-11-02:2'])).toBe(0); // between two
    expect(await lookups(a, ['inv:2026-11-01:99~', 'inv:2026-11-02:5'])).toBe(0); // just past one's end
    expect(await lookups(b, ['inv:2026-11-01:14'])).toBe(0); // another tenant's range
  });

  it('looks up a batch that meets a range, at its start, its end or across it', async () => {
    expect(await lookups(a, ['inv:2026-11-02:1', 'inv:2026-11-03:00'])).toBeGreaterThan(0); // reaches just past a range's lowest key
    expect(await lookups(a, ['inv:2026-11-05:98~', 'inv:2026-11-06:1'])).toBeGreaterThan(0); // starts just before its highest
    expect(await lookups(a, ['inv:2026-11-02:1', 'inv:2026-11-04:1'])).toBeGreaterThan(0); // spans one
    expect(await lookups(a, ['inv:2026-11-03:5x'])).toBeGreaterThan(0); // inside one
  });

  it('refuses the retired key of a batch that meets a range, and creates the others, for its own tenant only', async () => {
    const keys = ['inv:2026-11-03:new', 'inv:2026-11-03:14', 'inv:2026-12-03:1'];
    expect(await statuses(a, keys)).toEqual({ 'inv:2026-11-03:new': 'created', 'inv:2026-11-03:14': 'retired', 'inv:2026-12-03:1': 'created' });
    expect(await statuses(b, ['inv:2026-11-03:14'])).toEqual({ 'inv:2026-11-03:14': 'created' });
    // Inside a caller's transaction the batch is asked about first; the answer is the same.
    const inTx = await db.dataSource.transaction((m) => jobs.insertBatch(a, [job('inv:2026-11-05:19'), job('inv:2026-12-03:2')], m));
    expect(inTx.map((o) => o.status)).toEqual(['retired', 'created']);
  });

  it('looks up every batch of a tenant whose range is unbounded (keys retired before the ranges existed)', async () => {
    await retire(b, ['legacy:7'], null);
    try {
      expect(await lookups(b, ['zzz:1'])).toBeGreaterThan(0);
      expect(await statuses(b, ['legacy:7', 'zzz:2'])).toEqual({ 'legacy:7': 'retired', 'zzz:2': 'created' });
    } finally {
      await db.dataSource.query(`DELETE FROM retired_key_ranges WHERE tenant_id = $1`, [b]);
    }
  });

  it('refuses to delete finished jobs outside READ COMMITTED, where the ranges could come to overlap', async () => {
    const [{ id }] = await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at) VALUES ($1, 'rr:1', 'noop', now(), 'd', now()) RETURNING id`, [b]);
    const q = db.dataSource.createQueryRunner();
    try {
      await q.startTransaction('REPEATABLE READ');
      await expect(q.query(`DELETE FROM jobs WHERE id = $1`, [id])).rejects.toThrow(/READ COMMITTED/);
      await q.rollbackTransaction();
      await q.query(`DELETE FROM jobs WHERE id = $1`, [id]); // READ COMMITTED: recorded
    } finally {
      if (q.isTransactionActive) await q.rollbackTransaction();
      await q.release();
    }
    expect(await db.dataSource.query(`SELECT lo, hi FROM retired_key_ranges WHERE tenant_id = $1`, [b])).toEqual([{ lo: 'rr:1', hi: 'rr:1' }]);
    await db.dataSource.query(`DELETE FROM retired_key_ranges WHERE tenant_id = $1`, [b]);
  });

  it('covers keys retired before the migration with an unbounded range per tenant, and any later DELETE of finished jobs with their ranges (the migration, down and up)', async () => {
    const old = await createTestDatabase(2);
    try {
      const migration = new RetiredKeyRanges1764400080000();
      const q = old.dataSource.createQueryRunner();
      await migration.down(q);
      const tenants = new TenantsRepository(old.dataSource);
      const t1 = (await tenants.create('t1')).tenant.id;
      const t2 = (await tenants.create('t2')).tenant.id;
      // What the removal statement of the release before wrote: the hash, and no range.
      const oldRetire = `INSERT INTO retired_keys (key_hash, removed_on, state) VALUES (hashtextextended($2, $1), '2026-11-20', 'x')`;
      await old.dataSource.query(oldRetire, [t1, 'old:1']);
      await migration.up(q);
      await q.release();
      expect(await old.dataSource.query(`SELECT tenant_id, lo, hi FROM retired_key_ranges ORDER BY tenant_id`)).toEqual([
        { tenant_id: t1, lo: '', hi: null },
        { tenant_id: t2, lo: '', hi: null },
      ]);
      const repo = new JobsRepository(old.dataSource);
      expect((await repo.insertBatch(t1, [job('old:1'), job('zzz')])).map((o) => o.status)).toEqual(['retired', 'created']);
      // A tenant made since, whose finished job a promoter of the release before removes: the
      // database records the range, so the key is still refused.
      const t3 = (await tenants.create('t3')).tenant.id;
      await old.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at) VALUES ($1, 'k:7', 'noop', now(), 'd', now()), ($1, 'k:8', 'noop', now(), 's', NULL)`, [t3]);
      await old.dataSource.query(`WITH gone AS (DELETE FROM jobs WHERE tenant_id = $1 AND key = 'k:7' RETURNING key) ${oldRetire.replace("VALUES (hashtextextended($2, $1), '2026-11-20', 'x')", "SELECT hashtextextended(key, $1), '2026-11-20', 'x' FROM gone")}`, [t3]);
      // A job deleted unfinished (a schedule's unrun occurrence) leaves no range.
      await old.dataSource.query(`DELETE FROM jobs WHERE tenant_id = $1 AND key = 'k:8'`, [t3]);
      expect(await old.dataSource.query(`SELECT lo, hi FROM retired_key_ranges WHERE tenant_id = $1`, [t3])).toEqual([{ lo: 'k:7', hi: 'k:7' }]);
      expect((await repo.insertBatch(t3, [job('k:7')]))[0].status).toBe('retired');
    } finally {
      await old.drop();
    }
  });
});
