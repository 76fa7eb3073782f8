import { createTestDatabase, type TestDatabase } from '../../../../test/support/test-db';
import { SweepsRepository } from './sweeps.repository';

describe('SweepsRepository (Postgres)', () => {
  let db: TestDatabase;
  let repo: SweepsRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    repo = new SweepsRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  async function fill(state: string, n: number, tag: string) {
    await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1, $1 || g, 'noop', now(), $2::"char" FROM generate_series(1, $3) g`,
      [`${tag}-${state}-`, state, n],
    );
  }

  describe('estimateJobStates', () => {
    it('counts exactly while the table was never analysed', async () => {
      await fill('s', 30, 'a');
      await fill('q', 5, 'a');
      expect(await repo.estimateJobStates()).toEqual({ scheduled: 30, queued: 5, running: 0, succeeded: 0, dead: 0, cancelled: 0 });
    });

    it('after ANALYZE: planner estimate for the big states, exact counts for queued and running', async () => {
      await fill('s', 20_000, 'b');
      await fill('d', 10_000, 'b');
      await fill('r', 7, 'b');
      await db.dataSource.query('ANALYZE jobs');
      await fill('q', 3, 'late'); // after the stats: still counted exactly
      const est = await repo.estimateJobStates();
      expect(est.queued).toBe(8);
      expect(est.running).toBe(7);
      expect(est.scheduled).toBeGreaterThan(18_000);
      expect(est.scheduled).toBeLessThan(22_000);
      expect(est.succeeded).toBeGreaterThan(9_000);
      expect(est.succeeded).toBeLessThan(11_000);
    });
  });

  describe('withSweepLock', () => {
    it('lets one holder in at a time and releases on error', async () => {
      const inner = await repo.withSweepLock('overdue', () => repo.withSweepLock('overdue', async () => 'inner ran'));
      expect(inner).toBeNull();
      await expect(repo.withSweepLock('overdue', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
      expect(await repo.withSweepLock('overdue', async () => 'free again')).toBe('free again');
      expect(await repo.withSweepLock('stats', async () => 'other sweeps are independent')).toBe('other sweeps are independent');
    });
  });
});
