import { planOf } from '@almanac/testing/plans';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { APPLY_BULK_CANCEL_SQL } from '../statements/apply-bulk-chunk.sql';
import { ExecutionRepository } from './execution.repository';

const NOW = new Date('2026-12-02T09:00:00Z');

describe('the claim with a burst of due rows the statistics have not seen (Postgres)', () => {
  let db: TestDatabase;
  let ids: string[];

  beforeAll(async () => {
    db = await createTestDatabase();
    // Deterministic stale statistics: analyzed while every row is cold, then the burst is
    // promoted; autovacuum must not re-analyze meanwhile.
    await db.dataSource.query(`ALTER TABLE jobs SET (autovacuum_enabled = false)`);
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT 1, 'k' || g, 'noop', $1::timestamptz + interval '2 days', 's' FROM generate_series(1, 20000) g`,
      [NOW],
    );
    await db.dataSource.query('ANALYZE jobs');
    await db.dataSource.query(`UPDATE jobs SET state = 'q', run_at = $1`, [NOW]);
    ids = (await db.dataSource.query<{ id: string }[]>(`SELECT id::text FROM jobs ORDER BY id LIMIT 500`)).map((r) => r.id);
  });
  afterAll(() => db.drop());

  // The claim's own plan is in statements/by-id-plans.spec.ts.
  it("a bulk operation's chunk finds its rows through the primary key, not by reading every due queued row (jobs_queued_due)", async () => {
    await db.dataSource.query(`INSERT INTO tenants (name) VALUES ('t')`);
    const [{ id: op }] = await db.dataSource.query(`INSERT INTO bulk_operations (tenant_id, action, filter) VALUES (1, 'cancel', '{}') RETURNING id::text AS id`);
    await db.dataSource.query(`INSERT INTO bulk_operation_chunks (operation_id, chunk, job_ids) VALUES ($1, 0, $2::bigint[])`, [op, ids]);
    await db.dataSource.query(`UPDATE bulk_operations SET state = 'running', chunks = 1`);
    const apply = await planOf(db.dataSource, APPLY_BULK_CANCEL_SQL, [op, 0]);
    expect(apply).toMatch(/jobs_pkey/);
    expect(apply).not.toMatch(/jobs_queued_due/);
  });

  it('still claims exactly the due queued rows, and says which queued rows are not due yet', async () => {
    await db.dataSource.query(`UPDATE jobs SET state = 'c' WHERE id = $1`, [ids[0]]);
    const later = new Date(NOW.getTime() + 60_000);
    await db.dataSource.query(`UPDATE jobs SET run_at = $2 WHERE id = $1`, [ids[1], later]);
    const { claimed, early } = await new ExecutionRepository(db.dataSource).claim(ids.slice(0, 10), NOW, new Date(NOW.getTime() + 30_000), 7);
    expect(claimed.map((r) => r.id).sort()).toEqual(ids.slice(2, 10).sort());
    expect(claimed.every((r) => r.attempt === 1)).toBe(true);
    expect(early).toEqual([{ id: ids[1], dueMs: later.getTime() }]);
  });

  it('takes a row whose attempts counter is full as stale, and still claims the rows batched with it', async () => {
    await db.dataSource.query(`UPDATE jobs SET attempts = 32767, max_attempts = 32767 WHERE id = $1`, [ids[30]]);
    const { claimed, early } = await new ExecutionRepository(db.dataSource).claim(ids.slice(30, 34), NOW, new Date(NOW.getTime() + 30_000), 7);
    expect(claimed.map((r) => r.id).sort()).toEqual(ids.slice(31, 34).sort());
    expect(early).toEqual([]);
    const [row] = await db.dataSource.query<{ state: string; attempts: number }[]>(`SELECT state, attempts FROM jobs WHERE id = $1`, [ids[30]]);
    expect(row).toEqual({ state: 'q', attempts: 32767 });
  });

  it('a release with the attempts counter full makes the job dead, since no claim could take it again', async () => {
    const repo = new ExecutionRepository(db.dataSource);
    await db.dataSource.query(`UPDATE jobs SET state = 'r', attempts = 32767, max_attempts = 100, claimed_by = 7 WHERE id = $1`, [ids[40]]);
    await db.dataSource.query(`UPDATE jobs SET state = 'r', attempts = 3, max_attempts = 100, claimed_by = 7 WHERE id = $1`, [ids[41]]);
    await repo.release([{ id: ids[40], attempt: 32767 }, { id: ids[41], attempt: 3 }], NOW, 'w-1', [NOW, NOW]);
    const rows = await db.dataSource.query<{ id: string; state: string }[]>(`SELECT id::text AS id, state FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id`, [[ids[40], ids[41]]]);
    expect(rows).toEqual([{ id: ids[40], state: 'x' }, { id: ids[41], state: 'q' }]);
  });

  it('sent again with the same lease (a lost reply), returns what it took without counting twice; another claim gets nothing', async () => {
    const repo = new ExecutionRepository(db.dataSource);
    const lease = new Date(NOW.getTime() + 31_000);
    const first = await repo.claim(ids.slice(20, 25), NOW, lease, 8);
    const again = await repo.claim(ids.slice(20, 25), NOW, lease, 8);
    expect(again.claimed).toEqual(first.claimed);
    expect(again.claimed.map((r) => r.attempt)).toEqual([1, 1, 1, 1, 1]);
    expect((await repo.claim(ids.slice(20, 25), NOW, new Date(NOW.getTime() + 32_000), 8)).claimed).toEqual([]);
    expect((await repo.claim(ids.slice(20, 25), NOW, lease, 9)).claimed).toEqual([]);
    const marks = await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::bigint[]) AND claimed_by = 8`, [ids.slice(20, 25)]);
    expect(marks[0].n).toBe(5);
  });

  it('a completion sent again (a lost reply) reports the rows its first send wrote, not those a release by the same worker moved', async () => {
    const repo = new ExecutionRepository(db.dataSource);
    await db.dataSource.query(`UPDATE jobs SET state = 'r', attempts = 1, claimed_by = 7 WHERE id = ANY($1::bigint[])`, [ids.slice(50, 52)]);
    const record = (id: string) => ({ id, attempt: 1, tenantId: 1, next: 'queued' as const, runAt: NOW, error: 'not yet', outcome: 'failed' as const, startedAt: NOW, finishedAt: NOW, workerId: 'w-1' });
    await repo.release([{ id: ids[51], attempt: 1 }], NOW, 'w-1', [NOW]);
    expect([...(await repo.complete([record(ids[50]), record(ids[51])], NOW))]).toEqual([ids[50]]);
    expect([...(await repo.complete([record(ids[50]), record(ids[51])], NOW))]).toEqual([ids[50]]);
    const [{ n }] = await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM job_attempts WHERE job_id = $1`, [ids[50]]);
    expect(n).toBe(1);
  });
});
