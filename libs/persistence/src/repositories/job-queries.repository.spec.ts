import { insertJob } from '@almanac/testing/job-rows';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import type { DataSource } from 'typeorm';
import { JobListFilter, JobQueriesRepository, ListPosition } from './job-queries.repository';

const H = 3600_000;
const T0 = Date.parse('2026-12-01T00:00:00Z');

describe('JobQueriesRepository', () => {
  let db: TestDatabase;
  let repo: JobQueriesRepository;

  beforeAll(async () => {
    db = await createTestDatabase(1);
    repo = new JobQueriesRepository(db.dataSource);
  });
  afterAll(() => db.drop());

  beforeEach(() => db.dataSource.query('TRUNCATE jobs'));

  const insert = (tenant: number, key: string, runAtMs: number, state: string, kind?: string) =>
    insertJob(db.dataSource, tenant, key, runAtMs, state, kind);

  async function pageAll(tenant: number, filter: Parameters<JobQueriesRepository['list']>[1], limit: number) {
    const keys: string[] = [];
    let after: ListPosition | null = null;
    for (let i = 0; i < 100; i++) {
      const page = await repo.list(tenant, filter, after, limit);
      keys.push(...page.items.map((j) => j.key));
      if (!page.next) return keys;
      after = page.next;
    }
    throw new Error('did not terminate');
  }

  interface PlanNode {
    'Relation Name'?: string;
    'Actual Rows': number;
    'Actual Loops': number;
    'Rows Removed by Filter'?: number;
    'Rows Removed by Index Recheck'?: number;
    Plans?: PlanNode[];
  }

  /** Rows of jobs one list call reads, over all its statements (EXPLAIN ANALYZE of each as it runs). */
  async function listReading(tenant: number, filter: JobListFilter, after: ListPosition | null, limit: number) {
    let read = 0;
    const count = (n: PlanNode): void => {
      if (n['Relation Name'] === 'jobs') read += (n['Actual Rows'] + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * n['Actual Loops'];
      n.Plans?.forEach(count);
    };
    const query = async (sql: string, params?: unknown[]) => {
      const [row]: { 'QUERY PLAN': { Plan: PlanNode }[] }[] = await db.dataSource.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      count(row['QUERY PLAN'][0].Plan);
      return db.dataSource.query(sql, params);
    };
    // A list runs on one connection of its own (onConnection): here, each statement analysed as it runs.
    const analyzing = { createQueryRunner: () => ({ connect: async () => undefined, release: async () => undefined, query }) } as unknown as DataSource;
    const page = await new JobQueriesRepository(analyzing).list(tenant, filter, after, limit);
    return { page, read };
  }

  it('pages every state in (run_at, id) order, merging cold and non-cold rows, tenant-scoped', async () => {
    const expected: string[] = [];
    for (let i = 0; i < 40; i++) {
      const state = ['s', 'q', 'd', 'x', 'c'][i % 5];
      // cold rows spread over many hours with gaps, others interleaved
      await insert(1, `k${String(i).padStart(2, '0')}`, T0 + i * 7 * H + (i % 3) * 1000, state);
      expected.push(`k${String(i).padStart(2, '0')}`);
      await insert(2, `other${i}`, T0 + i * 7 * H, state);
    }
    for (const limit of [1, 3, 7, 50]) {
      expect(await pageAll(1, {}, limit)).toEqual(expected);
    }
    expect(await pageAll(1, { state: 'scheduled' }, 4)).toEqual(expected.filter((_, i) => i % 5 === 0));
    expect(await pageAll(1, { state: 'dead' }, 2)).toEqual(expected.filter((_, i) => i % 5 === 3));
  });

  it('bounds the work of a filtered scan: a rare state pages on with cursors past the scan cap', async () => {
    const values = Array.from({ length: 25_000 }, (_, i) => `(1, 'h${i}', 'noop', $1::timestamptz + ${i} * interval '1 second', '${i % 12_000 === 11_999 ? 'x' : 'd'}')`);
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ${values.join(',')}`, [new Date(T0)]);
    const pages: number[] = [];
    let after: ListPosition | null = null;
    const keys: string[] = [];
    do {
      const page = await repo.list(1, { state: 'dead' }, after, 10);
      pages.push(page.items.length);
      keys.push(...page.items.map((j) => j.key));
      after = page.next;
    } while (after);
    expect(keys).toEqual(['h11999', 'h23999']);
    expect(pages.length).toBeGreaterThanOrEqual(3); // 25,000 rows at 10,000 per call
  });

  it("lists a tenant's queued rows by reading its own rows, not every tenant's queued rows (jobs_queued_due)", async () => {
    // Every job due within the hot horizon is queued: another tenant's next 24 hours.
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state)
      SELECT 1, 'q' || g, 'noop', $1::timestamptz + g * interval '4 seconds', 'q' FROM generate_series(1, 20000) g`, [new Date(T0)]);
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state)
      SELECT 2, 'h' || g, 'noop', $1::timestamptz - g * interval '1 minute', 'd' FROM generate_series(1, 100) g`, [new Date(T0)]);
    for (const k of ['a', 'b', 'c']) await insert(2, k, T0 + 23 * H + k.charCodeAt(0) * 1000, 'q');
    await db.dataSource.query('ANALYZE jobs');
    const own = await listReading(2, { state: 'queued' }, null, 50);
    expect(own.page.items.map((j) => j.key)).toEqual(['a', 'b', 'c']);
    expect(own.read).toBeLessThanOrEqual(2 * 103 + 3); // its 103 rows for the page and for the cap's check, 3 by id; not 20,000
    expect((await listReading(3, { state: 'queued' }, null, 50)).read).toBe(0);
    // The big tenant's own listing is capped like any filtered scan, and in order.
    const big = await listReading(1, { state: 'queued' }, null, 5);
    expect(big.page.items.map((j) => j.key)).toEqual(['q1', 'q2', 'q3', 'q4', 'q5']);
    expect(big.read).toBeLessThanOrEqual(10_000 + 5);
  });

  it('bounds the rows a scheduled list reads per call: a kind found in few rows pages on by hour cursors', async () => {
    // 40 hours of 1,000 cold rows for tenant 1 (two of them of a rare kind), the same for tenant 2.
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state)
      SELECT t, 'c' || g, CASE WHEN t = 1 AND g IN (5500, 35500) THEN 'rare' ELSE 'noop' END,
             $1::timestamptz + g * interval '3.6 seconds', 's'
        FROM generate_series(1, 40000) g, generate_series(1, 2) t`, [new Date(T0)]);
    await db.dataSource.query('ANALYZE jobs');
    const keys: string[] = [];
    const reads: number[] = [];
    let after: ListPosition | null = null;
    do {
      const { page, read } = await listReading(1, { state: 'scheduled', kind: 'rare' }, after, 10);
      keys.push(...page.items.map((j) => j.key));
      reads.push(read);
      after = page.next;
    } while (after && reads.length < 20);
    expect(keys).toEqual(['c5500', 'c35500']);
    expect(Math.max(...reads)).toBeLessThanOrEqual(10_000 + 100); // the cap, the bucket probes and the page
    expect(reads.length).toBeGreaterThanOrEqual(4); // 40,000 rows at 10,000 per call
  });

  it('pages through one hour holding more rows than the scan cap, in order, without losing any', async () => {
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state)
      SELECT 1, 'b' || lpad(g::text, 5, '0'), 'noop', $1::timestamptz + (20000 - g) * interval '0.1 second', 's' FROM generate_series(1, 12000) g`, [new Date(T0)]);
    for (let i = 0; i < 3; i++) await insert(1, `next-${i}`, T0 + (i + 1) * H + 1000, 's');
    await insert(1, 'before', T0 - H, 's');
    const expected = ['before', ...Array.from({ length: 12000 }, (_, i) => `b${String(12000 - i).padStart(5, '0')}`), 'next-0', 'next-1', 'next-2'];
    const keys: string[] = [];
    let after: ListPosition | null = null;
    for (let calls = 0; calls < 40; calls++) {
      const page = await repo.list(1, { state: 'scheduled' }, after, 1000);
      keys.push(...page.items.map((j) => j.key));
      after = page.next;
      if (!after) break;
    }
    expect(keys).toEqual(expected);
    expect(await pageAll(1, {}, 7_000)).toEqual(expected); // merged with the (empty) non-cold side
  });

  it('applies kind and run-time range filters', async () => {
    await insert(1, 'a', T0, 's', 'noop');
    await insert(1, 'b', T0 + H, 's', 'http');
    await insert(1, 'c', T0 + 2 * H, 'q', 'http');
    await insert(1, 'd', T0 + 3 * H, 'q', 'noop');
    expect(await pageAll(1, { kind: 'http' }, 1)).toEqual(['b', 'c']);
    expect(await pageAll(1, { from: new Date(T0 + H), to: new Date(T0 + 3 * H) }, 10)).toEqual(['b', 'c']);
  });

  it('pages a sparse tenant whose rows are far apart without losing any', async () => {
    await insert(1, 'now', T0, 's');
    await insert(1, 'in-a-year', T0 + 365 * 24 * H, 's');
    await insert(2, 'noise', T0 + 30 * 24 * H, 's');
    expect(await pageAll(1, { state: 'scheduled' }, 10)).toEqual(['now', 'in-a-year']);
  });

  it("reads only the tenant's own scheduled rows: another tenant's cold hours are not scanned", async () => {
    for (let i = 0; i < 30; i++) await insert(1, `cold-${i}`, T0 + i * 60_000, 's');
    for (const f of [{}, { state: 'scheduled' as const }]) {
      const plans = await repo.explainList(2, f, null, 1);
      const cold = plans.filter((p) => /date_trunc/.test(p)); // almanac_hour(), inlined by the planner
      expect(cold.length).toBeGreaterThan(0);
      for (const plan of cold) {
        expect(plan).toMatch(/jobs_cold_tenant/);
        expect(plan).not.toMatch(/jobs_cold_due/); // every tenant's hour buckets, filtered afterwards
      }
    }
    expect((await repo.list(2, {}, null, 1)).items).toEqual([]);
    expect((await repo.list(1, { state: 'scheduled' }, null, 1)).items).toHaveLength(1);
  });

  it('lists through indexes only (no Seq Scan on jobs) for every filter shape', async () => {
    await insert(1, 'a', T0, 's');
    await insert(1, 'b', T0 + H, 'q');
    await db.dataSource.query('SET enable_seqscan = off'); // pool of one: applies to the connection repo uses
    try {
      const after = { runAt: '2026-12-01T00:00:00.000000Z', id: '1' };
      const shapes = [
        {},
        { state: 'scheduled' as const },
        { state: 'succeeded' as const, kind: 'noop' },
        { state: 'queued' as const },
        { state: 'running' as const, kind: 'noop' },
        { from: new Date(T0), to: new Date(T0 + 48 * H) },
      ];
      for (const f of shapes) {
        for (const cursor of [null, after]) {
          const plans = await repo.explainList(1, f, cursor, 50);
          expect(plans.length).toBeGreaterThan(0);
          for (const plan of plans) {
            expect(plan).not.toMatch(/Seq Scan/);
            expect(plan).not.toMatch(/Sort Key:.*::text/); // ordered by the bigint id, not its text
            expect(plan).toMatch(/jobs_tenant_list|jobs_cold_tenant|jobs_queued_due|jobs_running_lease/);
          }
        }
      }
    } finally {
      await db.dataSource.query('RESET enable_seqscan');
    }
  });
});
