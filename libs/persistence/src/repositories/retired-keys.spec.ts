import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { JobsRepository, type NewJob } from './jobs.repository';
import { createTenants } from '@almanac/testing/tenant-rows';

const RUN_AT = new Date('2026-12-04T09:00:00Z');
const job = (key: string): NewJob => ({ kind: 'noop', key, runAt: RUN_AT, payload: null, state: 'scheduled' });

/**
 * Reserved keys at insert: retired_keys (tenant_id, key), read by the jobs_refuse_retired_keys
 * trigger and by insertBatch's answer.
 */
describe('reserved keys at insert (Postgres)', () => {
  let db: TestDatabase;
  let jobs: JobsRepository;
  let a: number;
  let b: number;

  /** What the retention sweep leaves for a removed job. */
  const retire = (tenantId: number, keys: string[]) =>
    db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) SELECT $1, k, '2026-11-02', 'd' FROM unnest($2::text[]) k`, [
      tenantId,
      keys,
    ]);
  const statuses = async (tenantId: number, keys: string[]) =>
    Object.fromEntries((await jobs.insertBatch(tenantId, keys.map(job))).map((o, i) => [keys[i], o.status]));

  /** How many index scans an insert of these keys made of retired_keys (the insert is rolled back). */
  async function scans(tenantId: number, keys: string[]): Promise<number> {
    const q = db.dataSource.createQueryRunner();
    await q.startTransaction();
    // A delta: the backend's counts not yet flushed (transactions a moment before) show too.
    const count = async () =>
      (await q.query(`SELECT coalesce(sum(seq_scan + idx_scan), 0)::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'retired_keys'`))[0].n as number;
    try {
      const before = await count();
      await q.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT $1, k, 'noop', now(), 's' FROM unnest($2::text[]) k`, [tenantId, keys]);
      return (await count()) - before;
    } finally {
      await q.rollbackTransaction();
      await q.release();
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase(2);
    jobs = new JobsRepository(db.dataSource);
    [a, b] = await createTenants(db.dataSource, 'a', 'b');
    await retire(a, ['inv:2026-11-03:14', 'inv:2026-11-05:19']);
  });
  beforeEach(() => db.dataSource.query('TRUNCATE jobs'));
  afterAll(() => db.drop());

  it('refuses a retired key of a batch and creates the others, for its own tenant only', async () => {
    const keys = ['inv:2026-11-03:new', 'inv:2026-11-03:14', 'inv:2026-12-03:1'];
    expect(await statuses(a, keys)).toEqual({ 'inv:2026-11-03:new': 'created', 'inv:2026-11-03:14': 'retired', 'inv:2026-12-03:1': 'created' });
    expect(await statuses(b, ['inv:2026-11-03:14'])).toEqual({ 'inv:2026-11-03:14': 'created' });
    // Inside a caller's transaction the batch is asked about first; the answer is the same.
    const inTx = await db.dataSource.transaction((m) => jobs.insertBatch(a, [job('inv:2026-11-05:19'), job('inv:2026-12-03:2')], m));
    expect(inTx.map((o) => o.status)).toEqual(['retired', 'created']);
  });

  it("probes key by key only a batch whose key range holds one of its tenant's retired keys, bounds included", async () => {
    expect(await scans(a, ['inv:2026-12-03:1', 'inv:2026-12-03:2', 'inv:2026-12-03:3'])).toBe(1); // past them all: one descent
    expect(await scans(a, ['inv:2026-11-03:15', 'inv:2026-11-04:1', 'inv:2026-11-05:1'])).toBe(1); // between the two
    expect(await scans(b, ['inv:2026-11-03:14', 'inv:2026-11-05:19'])).toBe(1); // another tenant's
    expect(await scans(a, ['inv:2026-11-03:1', 'inv:2026-11-04:1'])).toBeGreaterThan(1); // around one: looked up, and not refused
    expect(await statuses(a, ['inv:2026-11-03:14', 'inv:2026-11-04:1'])).toEqual({ 'inv:2026-11-03:14': 'retired', 'inv:2026-11-04:1': 'created' }); // its lowest key retired
    expect(await statuses(a, ['inv:2026-11-04:2', 'inv:2026-11-05:19'])).toEqual({ 'inv:2026-11-04:2': 'created', 'inv:2026-11-05:19': 'retired' }); // its highest
  });

  it("refuses only the key itself: a tenant's keys are kept as keys, not as hashes another tenant's key could collide with", async () => {
    const [row] = await db.dataSource.query(`SELECT tenant_id, key FROM retired_keys WHERE tenant_id = $1 ORDER BY key LIMIT 1`, [a]);
    expect(row).toEqual({ tenant_id: a, key: 'inv:2026-11-03:14' });
    const refused = await db.dataSource
      .query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, 'inv:2026-11-03:14', 'noop', now(), 's'), ($2, 'inv:2026-11-03:14', 'noop', now(), 's')`, [b, a])
      .catch((err: { code?: string }) => err.code);
    expect(refused).toBe('AL001'); // a statement over two tenants: a's key is refused, whatever b's rows
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, 'inv:2026-11-03:14', 'noop', now(), 's')`, [b]);
  });

  it('lets a key name a new job once its reservation has ended, before the sweep frees it; through its last day it stays refused', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await db.dataSource.query(
      `INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through)
       VALUES ($1, 'ended', '2026-01-01', 'd', (now() AT TIME ZONE 'UTC')::date - 1), ($1, 'last-day', '2026-01-01', 'd', (now() AT TIME ZONE 'UTC')::date)`,
      [b],
    );
    expect(await statuses(b, ['ended', 'last-day'])).toEqual({ ended: 'created', 'last-day': 'retired' });
    expect((await jobs.findRetired(b, ['last-day']))[0]).toMatchObject({ reservedThrough: today });
  });

  it('lets finished jobs be deleted under any isolation level (no ranges to keep disjoint)', async () => {
    const [{ id }] = await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, finished_at) VALUES ($1, 'rr:1', 'noop', now(), 'd', now()) RETURNING id`, [b]);
    await db.dataSource.transaction('REPEATABLE READ', (m) => m.query(`DELETE FROM jobs WHERE id = $1`, [id]));
    expect(await db.dataSource.query(`SELECT id FROM jobs WHERE id = $1`, [id])).toEqual([]);
  });
});
