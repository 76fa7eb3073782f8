import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { RetiredKeyRanges1764400080000 } from '../migrations/1764400080000-retired-key-ranges';
import { JobsRepository, type NewJob } from './jobs.repository';
import { TenantsRepository } from './tenants.repository';

const RUN_AT = new Date('2026-12-04T09:00:00Z');
const job = (key: string): NewJob => ({ kind: 'noop', key, runAt: RUN_AT, payload: null, state: 'scheduled' });
const NOVEMBER = Array.from({ length: 300 }, (_, i) => `inv:2026-11-${String((i % 30) + 1).padStart(2, '0')}:${i}`);

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

  /** What the retention sweep leaves: each key's hash, and a range covering them. */
  const retire = (tenantId: number, keys: string[], hi: string | null = [...keys].sort().at(-1)!) =>
    db.dataSource.query(
      `WITH k AS (INSERT INTO retired_keys (key_hash, removed_on, state) SELECT hashtextextended(k, $1), '2026-11-02', 'd' FROM unnest($2::text[]) k)
       INSERT INTO retired_key_ranges (tenant_id, lo, hi) VALUES ($1, $3, $4)`,
      [tenantId, keys, [...keys].sort()[0], hi],
    );
  const statuses = async (tenantId: number, keys: string[]) =>
    Object.fromEntries((await jobs.insertBatch(tenantId, keys.map(job))).map((o, i) => [keys[i], o.status]));
  /** The batch's outcomes, and how often the insert looked into retired_keys. */
  const lookups = (tenantId: number, keys: string[]) =>
    db.dataSource.transaction(async (m) => {
      await m.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT $1, k, 'noop', now(), 's' FROM unnest($2::text[]) k`, [tenantId, keys]);
      return (await m.query(`SELECT coalesce(sum(seq_scan + idx_scan), 0)::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'retired_keys'`))[0].n as number;
    });

  beforeAll(async () => {
    db = await createTestDatabase(2);
    jobs = new JobsRepository(db.dataSource);
    const tenants = new TenantsRepository(db.dataSource);
    a = (await tenants.create('a')).tenant.id;
    b = (await tenants.create('b')).tenant.id;
    await retire(a, NOVEMBER); // a month of a's invoices, removed
  });
  beforeEach(() => db.dataSource.query('TRUNCATE jobs'));
  afterAll(() => db.drop());

  it("does not look up a batch whose keys lie outside the tenant's retired ranges", async () => {
    expect(await lookups(a, ['inv:2026-12-03:1', 'inv:2026-12-03:2'])).toBe(0);
    expect(await lookups(b, ['inv:2026-11-15:14'])).toBe(0); // another tenant's range
    expect(await lookups(a, ['inv:2026-10-31:1', 'inv:2026-12-03:3'])).toBeGreaterThan(0); // spans November
  });

  it('refuses the retired key of a batch that meets a range, and creates the others, for its own tenant only', async () => {
    const keys = ['inv:2026-11-15:new', 'inv:2026-11-15:14', 'inv:2026-12-03:1'];
    expect(await statuses(a, keys)).toEqual({ 'inv:2026-11-15:new': 'created', 'inv:2026-11-15:14': 'retired', 'inv:2026-12-03:1': 'created' });
    expect(await statuses(b, ['inv:2026-11-15:14'])).toEqual({ 'inv:2026-11-15:14': 'created' });
    // Inside a caller's transaction the batch is asked about first; the answer is the same.
    const inTx = await db.dataSource.transaction((m) => jobs.insertBatch(a, [job('inv:2026-11-20:19'), job('inv:2026-12-03:2')], m));
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

  it('gives every tenant an unbounded range when keys were retired before the ranges existed (the migration, down and up)', async () => {
    const old = await createTestDatabase(2);
    try {
      const migration = new RetiredKeyRanges1764400080000();
      const q = old.dataSource.createQueryRunner();
      await migration.down(q);
      const tenants = new TenantsRepository(old.dataSource);
      const t1 = (await tenants.create('t1')).tenant.id;
      const t2 = (await tenants.create('t2')).tenant.id;
      await old.dataSource.query(`INSERT INTO retired_keys (key_hash, removed_on, state) VALUES (hashtextextended('old:1', $1), '2026-11-20', 'x')`, [t1]);
      await migration.up(q);
      await q.release();
      expect(await old.dataSource.query(`SELECT tenant_id, lo, hi FROM retired_key_ranges ORDER BY tenant_id`)).toEqual([
        { tenant_id: t1, lo: '', hi: null },
        { tenant_id: t2, lo: '', hi: null },
      ]);
      const outcomes = await new JobsRepository(old.dataSource).insertBatch(t1, [job('old:1'), job('zzz')]);
      expect(outcomes.map((o) => o.status)).toEqual(['retired', 'created']);
    } finally {
      await old.drop();
    }
  });
});
