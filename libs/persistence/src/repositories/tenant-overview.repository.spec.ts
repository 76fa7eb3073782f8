import { insertJob } from '@almanac/testing/job-rows';
import { createTestDatabase, TestDatabase } from '@almanac/testing/test-db';
import { CONSOLE_STATE_COUNTS_SQL } from '../statements/console-state-counts.sql';
import { DUE_SOON_COUNTS_SQL } from '../statements/due-soon-counts.sql';
import { TenantOverviewRepository } from './tenant-overview.repository';

const MIN = 60_000;
const H = 60 * MIN;
const NOW = Date.parse('2026-12-02T12:00:30Z');

describe('TenantOverviewRepository', () => {
  let db: TestDatabase;
  let repo: TenantOverviewRepository;

  beforeAll(async () => {
    db = await createTestDatabase(1);
    repo = new TenantOverviewRepository(db.dataSource);
  });
  afterAll(() => db.drop());
  beforeEach(() => db.dataSource.query('TRUNCATE jobs, job_attempts'));

  const insert = (tenant: number, key: string, runAtMs: number, state: string) => insertJob(db.dataSource, tenant, key, runAtMs, state);
  const attempt = (jobId: string, n: number, startedMs: number) =>
    db.dataSource.query(`INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome) SELECT id, tenant_id, $2, $3, $3, 'succeeded' FROM jobs WHERE id = $1`, [jobId, n, new Date(startedMs)]);

  it('counts a tenant\'s jobs due in the window by state, cold rows and other tenants left out', async () => {
    for (const [i, s] of ['q', 'q', 'r', 'd', 'd', 'd', 'x', 'c'].entries()) await insert(1, `in-${i}`, NOW - (i + 1) * H, s);
    await insert(1, 'too-old', NOW - 30 * H, 'd');
    await insert(1, 'cold', NOW - H, 's');
    await insert(2, 'other', NOW - H, 'd');
    const c = await repo.stateCounts(1, new Date(NOW - 24 * H), new Date(NOW), 1000);
    expect(c).toEqual({ counts: { queued: 2, running: 1, succeeded: 3, dead: 1, cancelled: 1 }, read: 8, capped: false });
  });

  it('stops at the cap, newest first, and says so', async () => {
    for (let i = 0; i < 6; i++) await insert(1, `k${i}`, NOW - (i + 1) * MIN, i < 2 ? 'x' : 'd');
    const c = await repo.stateCounts(1, new Date(NOW - H), new Date(NOW), 4);
    expect(c).toEqual({ counts: { dead: 2, succeeded: 2 }, read: 4, capped: true });
  });

  it('reads a big tenant\'s state counts by a bounded walk of jobs_tenant_list', async () => {
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state)
      SELECT (g % 2) + 1, 'k' || g, 'noop', now() - (g || ' seconds')::interval, 'd' FROM generate_series(1, 100000) g`);
    await db.dataSource.query('ANALYZE jobs');
    const plan = await db.dataSource.query<{ 'QUERY PLAN': string }[]>(`EXPLAIN ${CONSOLE_STATE_COUNTS_SQL}`, [1, new Date(Date.now() - 24 * H), new Date(), 500]);
    const text = plan.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toMatch(/Limit/);
    expect(text).toMatch(/Index Scan Backward using jobs_tenant_list/);
  });

  it('counts what comes due soon: cold and queued rows in [from, to), each part up to the cap', async () => {
    await insert(1, 'cold-in', NOW + 10 * MIN, 's');
    await insert(1, 'cold-in-2', NOW + 50 * MIN, 's');
    await insert(1, 'queued-in', NOW + 5 * MIN, 'q');
    await insert(1, 'cold-out', NOW + 61 * MIN, 's');
    await insert(1, 'past', NOW - MIN, 'q');
    await insert(1, 'done', NOW + 6 * MIN, 'd');
    await insert(2, 'other', NOW + 5 * MIN, 's');
    expect(await repo.dueSoon(1, new Date(NOW), new Date(NOW + H), 100)).toEqual({ n: 3, capped: false });
    expect(await repo.dueSoon(1, new Date(NOW), new Date(NOW + H), 2)).toEqual({ n: 3, capped: true });
    // The queued part stops after reading its cap of the tenant's non-cold rows, queued or not.
    expect(await repo.dueSoon(1, new Date(NOW), new Date(NOW + H), 1)).toEqual({ n: 2, capped: true });
  });

  it('walks the tenant\'s own rows for the queued count, never every tenant\'s queued rows', async () => {
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state)
      SELECT (g % 50) + 1, 'k' || g, 'noop', $1::timestamptz + (g || ' seconds')::interval, CASE WHEN g % 3 = 0 THEN 's' ELSE 'q' END FROM generate_series(1, 20000) g`, [new Date(NOW)]);
    await db.dataSource.query('ANALYZE jobs');
    const plan = await db.dataSource.query<{ 'QUERY PLAN': string }[]>(`EXPLAIN ${DUE_SOON_COUNTS_SQL}`, [1, new Date(NOW), new Date(NOW + H), 100]);
    const text = plan.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).not.toMatch(/jobs_queued_due/);
    expect(text).toMatch(/jobs_tenant_list/);
  });

  it('gives executions and start lag per minute for jobs due in the window; a retried job adds executions, no lag', async () => {
    const base = NOW - 10 * MIN - 30_000; // 11:50:00
    const a = await insert(1, 'a', base, 'd');
    const b = await insert(1, 'b', base + 1000, 'd');
    const c = await insert(1, 'c', base + 2 * MIN, 'd');
    await attempt(a, 1, base + 100); // lag 100 ms
    await attempt(b, 1, base + 1000 + 300); // lag 300 ms
    await attempt(c, 1, base + 2 * MIN + 50);
    await attempt(c, 2, base + 3 * MIN);
    // A retry moved c's run_at to its backoff time, as complete-attempts does.
    await db.dataSource.query(`UPDATE jobs SET attempts = 2, run_at = $2 WHERE id = $1`, [c, new Date(base + 3 * MIN)]);
    await db.dataSource.query(`UPDATE jobs SET attempts = 1 WHERE id IN ($1, $2)`, [a, b]);
    const other = await insert(2, 'x', base, 'd');
    await attempt(other, 1, base + 5);
    const r = await repo.recentExecutions(1, new Date(NOW - H), new Date(NOW), 1000);
    expect(r.capped).toBe(false);
    expect(r.minutes.map((x) => [x.minute.toISOString(), x.executions, x.lagP50Ms, x.lagP95Ms])).toEqual([
      ['2026-12-02T11:50:00.000Z', 2, 200, expect.closeTo(290, 6)],
      ['2026-12-02T11:52:00.000Z', 1, null, null],
      ['2026-12-02T11:53:00.000Z', 1, null, null],
    ]);
    expect((await repo.recentExecutions(1, new Date(NOW - H), new Date(NOW), 2)).capped).toBe(true);
  });

  it("reads each job's newest attempts only, and says so when older ones in the window were left out", async () => {
    const base = NOW - 40 * MIN;
    const retried = await insert(1, 'retried', base + 30 * MIN, 'x'); // each retry moved run_at on
    // 30 attempts a minute apart, all in the window: the newest 20 are counted.
    await db.dataSource.query(
      `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome)
       SELECT $1, 1, n, $2::timestamptz + n * interval '1 minute', $2::timestamptz + n * interval '1 minute', 'failed' FROM generate_series(1, 30) n`,
      [retried, new Date(base)],
    );
    await db.dataSource.query(`UPDATE jobs SET attempts = 30 WHERE id = $1`, [retried]);
    const cut = await repo.recentExecutions(1, new Date(NOW - H), new Date(NOW), 1000);
    expect(cut.minutes.reduce((n, m) => n + m.executions, 0)).toBe(20);
    expect(cut.minutes[0].minute.toISOString()).toBe(new Date(base + 11 * MIN - 30_000).toISOString()); // attempt 11's minute
    expect(cut).toMatchObject({ read: 1, attemptsPerJob: 20, capped: true });
    // The window starting after attempt 10: the 21st newest (attempt 10) is outside it, nothing was left out.
    const whole = await repo.recentExecutions(1, new Date(base + 10.5 * MIN), new Date(NOW), 1000);
    expect(whole.minutes.reduce((n, m) => n + m.executions, 0)).toBe(20);
    expect(whole.capped).toBe(false);
  });

  it('lists the newest dead jobs among the rows the state counts walk', async () => {
    await insert(1, 'dead-old', NOW - 5 * H, 'x');
    await insert(1, 'ok', NOW - 2 * H, 'd');
    await insert(1, 'dead-new', NOW - H, 'x');
    await insert(2, 'dead-other', NOW - H, 'x');
    const rows = await repo.recentDead(1, new Date(NOW - 24 * H), new Date(NOW), 1000, 10);
    expect(rows.map((r) => r.key)).toEqual(['dead-new', 'dead-old']);
    expect((await repo.recentDead(1, new Date(NOW - 24 * H), new Date(NOW), 2, 10)).map((r) => r.key)).toEqual(['dead-new']);
  });
});
