import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { renewSweepLease } from '../statements/renew-sweep-lease.sql';
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

  describe('withSweepLease', () => {
    it('lets one holder in at a time, re-enters for the same holder, and releases on error', async () => {
      const inner = await repo.withSweepLease('overdue', 'a', () => repo.withSweepLease('overdue', 'b', async () => 'b ran'));
      expect(inner).toBeNull();
      expect(await repo.withSweepLease('overdue', 'a', () => repo.withSweepLease('overdue', 'a', async () => 'same holder'))).toBe('same holder');
      await expect(repo.withSweepLease('overdue', 'a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
      expect(await repo.withSweepLease('overdue', 'b', async () => 'free again')).toBe('free again');
    });

    it('holds no lock or open transaction while its holder waits (on Redis, say)', async () => {
      let entered!: () => void;
      let release!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const waiting = new Promise<void>((r) => (release = r));
      const run = repo.withSweepLease('overdue', 'a', async () => {
        entered();
        await waiting;
        return 'done';
      });
      await inside;
      const [held] = await db.dataSource.query<{ holder: string }[]>(
        `SELECT holder FROM sweep_leases WHERE name = 'overdue' AND expires_at > clock_timestamp()`,
      );
      expect(held?.holder).toBe('a');
      const [busy] = await db.dataSource.query<{ advisory: number; open_tx: number }[]>(
        `SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory')::int AS advisory,
                (SELECT count(*) FROM pg_stat_activity
                  WHERE datname = current_database() AND state LIKE 'idle in transaction%')::int AS open_tx`,
      );
      expect(busy).toEqual({ advisory: 0, open_tx: 0 });
      release();
      expect(await run).toBe('done');
    });

    it('a renewal extends only a lease still held: one landing after the release does not take it back', async () => {
      expect(await repo.withSweepLease('overdue', 'a', async () => renewSweepLease(db.dataSource, 'overdue', 'a', 15_000))).toBe(true);
      expect(await renewSweepLease(db.dataSource, 'overdue', 'a', 15_000)).toBe(false); // released
      expect(await repo.withSweepLease('overdue', 'b', async () => 'b got it')).toBe('b got it');
    });

    it('an expired lease goes to the next holder (a stalled holder loses its turn)', async () => {
      // ttl 0: the lease expires at its own clock_timestamp(), so the next statement finds it expired.
      let second: string | null = 'not run';
      await repo.withSweepLease('overdue', 'stalled', async () => {
        second = await repo.withSweepLease('overdue', 'other', async () => 'took over');
      }, 0);
      expect(second).toBe('took over');
    });
  });
});
