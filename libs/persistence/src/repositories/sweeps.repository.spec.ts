import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { releaseSweepLease } from '../statements/release-sweep-lease.sql';
import { renewSweepLease } from '../statements/renew-sweep-lease.sql';
import { queuedPage, SweepsRepository } from './sweeps.repository';

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

    it('counts queued and running only up to the cap; past it, the planner estimate (at least the cap) instead of reading the whole index', async () => {
      await fill('q', 40, 'c'); // after the stats: 48 queued, the estimate still about 5
      const est = await repo.estimateJobStates(10);
      expect(est.queued).toBeGreaterThanOrEqual(10);
      expect(est.queued).toBeLessThan(48); // counted in full: 48
      expect(est.running).toBe(7); // under the cap: exact
    });
  });

  describe('withSweepLease', () => {
    // Each repository is a holder of its own, as each promoter process is.
    const replica = (holder?: string) => new SweepsRepository(db.dataSource, holder);

    it('lets one run in at a time, of the same holder too, and releases on error', async () => {
      const [a, b] = [replica('a'), replica('b')];
      const inner = await a.withSweepLease('overdue', () => b.withSweepLease('overdue', async () => 'b ran'));
      expect(inner).toBeNull();
      // A second run of one holder waits its turn: had it run, its release would have freed the first run's lease.
      expect(await a.withSweepLease('overdue', async () => [
        await a.withSweepLease('overdue', async () => 'same holder'),
        await b.withSweepLease('overdue', async () => 'b ran'),
      ])).toEqual([null, null]);
      await expect(a.withSweepLease('overdue', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
      expect(await b.withSweepLease('overdue', async () => 'free again')).toBe('free again');
    });

    it('two replicas in one process (one host name, one pid, as containers on hostNetwork) taking the lease at once: only one runs', async () => {
      const ran: string[] = [];
      let decided = 0;
      let allDecided!: () => void;
      const bothDecided = new Promise<void>((r) => (allDecided = r));
      const decide = () => ++decided === 2 && allDecided();
      // The one that gets in holds the lease until the other has its answer.
      const attempt = (r: SweepsRepository, name: string) =>
        r.withSweepLease('overdue', async () => (ran.push(name), decide(), await bothDecided, name)).then((x) => (x ?? decide(), x));
      const results = await Promise.all([attempt(replica(), 'one'), attempt(replica(), 'two')]);
      expect(ran).toHaveLength(1);
      expect(results.filter((x) => x !== null)).toEqual(ran);
    });

    it('holds no lock or open transaction while its holder waits (on Redis, say)', async () => {
      const a = replica();
      let entered!: () => void;
      let release!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const waiting = new Promise<void>((r) => (release = r));
      const run = a.withSweepLease('overdue', async () => {
        entered();
        await waiting;
        return 'done';
      });
      await inside;
      const [held] = await db.dataSource.query<{ holder: string }[]>(
        `SELECT holder FROM sweep_leases WHERE name = 'overdue' AND expires_at > clock_timestamp()`,
      );
      expect(held?.holder).toBe(a.leaseHolder);
      const [busy] = await db.dataSource.query<{ advisory: number; open_tx: number }[]>(
        `SELECT (SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                  WHERE l.locktype = 'advisory' AND d.datname = current_database())::int AS advisory,
                (SELECT count(*) FROM pg_stat_activity
                  WHERE datname = current_database() AND state LIKE 'idle in transaction%')::int AS open_tx`,
      );
      expect(busy).toEqual({ advisory: 0, open_tx: 0 });
      release();
      expect(await run).toBe('done');
    });

    it('a renewal extends only a lease still held: one landing after the release does not take it back', async () => {
      const [a, b] = [replica('a'), replica('b')];
      expect(await a.withSweepLease('overdue', async () => renewSweepLease(db.dataSource, 'overdue', 'a', 15_000))).toBe(true);
      expect(await renewSweepLease(db.dataSource, 'overdue', 'a', 15_000)).toBe(false); // released
      expect(await b.withSweepLease('overdue', async () => 'b got it')).toBe('b got it');
    });

    it('an expired lease goes to the next holder (a stalled holder loses its turn)', async () => {
      // ttl 0: the lease expires at its own clock_timestamp(), so the next statement finds it expired.
      let second: string | null = 'not run';
      await replica('stalled').withSweepLease('overdue', async () => {
        second = await replica('other').withSweepLease('overdue', async () => 'took over');
      }, 0);
      expect(second).toBe('took over');
    });

    it('a holder whose renewal finds the lease gone is told to stop (its signal aborts)', async () => {
      // ttl 300 ms: renewed every 100 ms. Taken over meanwhile, as after a stall past the expiry.
      const aborted = await replica().withSweepLease('overdue', async (lost) => {
        await db.dataSource.query(`UPDATE sweep_leases SET holder = 'another replica' WHERE name = 'overdue'`);
        await new Promise((r) => lost.addEventListener('abort', r, { once: true }));
        return lost.aborted;
      }, 300);
      expect(aborted).toBe(true);
      await releaseSweepLease(db.dataSource, 'overdue', 'another replica');
    });
  });

  describe('scanQueued', () => {
    it('reads no further page once its stop signal is aborted (its caller lost the lease), and says where it stopped', async () => {
      await fill('q', 10, 'scan');
      const stop = new AbortController();
      const pages: number[] = [];
      const scan = await repo.scanQueued(null, 3, 100, async (rows) => {
        pages.push(rows.length);
        stop.abort();
      }, null, stop.signal);
      expect(pages).toEqual([3]);
      expect(scan).toMatchObject({ seen: 3, next: expect.objectContaining({ id: expect.any(String) }) });
    });

    it('visits every queued row once when ids of one run time differ in length: pages sorted the ids as text and skipped the shorter ones (review)', async () => {
      await db.dataSource.query(`DELETE FROM jobs`);
      // Ids gained a digit on 2026-10-10 (ms << 12): rows of one instant made on either side.
      const ids = ['99999999999999', '100000000000001', '100000000000002'];
      await db.dataSource.query(
        `INSERT INTO jobs (id, tenant_id, key, kind, run_at, state) SELECT id, 1, 'len-' || id, 'noop', '2026-12-24T09:00:00Z', 'q' FROM unnest($1::bigint[]) id`,
        [ids],
      );
      const seen: string[] = [];
      await repo.scanQueued(null, 2, 100, async (rows) => void seen.push(...rows.map((r) => r.id)));
      expect(seen).toEqual(ids);
    });

    it('reads about one page of rows per page when thousands share a run time: each page read and sorted all of them (review)', async () => {
      await db.dataSource.query(`DELETE FROM jobs`);
      await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT 1, 'burst-' || g, 'noop', '2026-12-24T09:00:00Z', 'q' FROM generate_series(1, 20000) g`);
      await db.dataSource.query(`ANALYZE jobs`);
      const [{ id }] = await db.dataSource.query<{ id: string }[]>(`SELECT id::text AS id FROM jobs ORDER BY id OFFSET 10000 LIMIT 1`);
      const [text, params] = queuedPage(new Date('2026-12-25T00:00:00Z'), { runAt: new Date('2026-12-24T09:00:00Z'), id }, 100);
      const [{ 'QUERY PLAN': [plan] }] = await db.dataSource.query<{ 'QUERY PLAN': { Plan: { 'Actual Rows': number } & Record<string, unknown> }[] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params);
      const read = JSON.stringify(plan).match(/"Actual Rows":\s*\d+/g)!.map((m) => Number(m.split(':')[1]));
      expect(Math.max(...read)).toBeLessThanOrEqual(200); // before: 20,000, the whole run time, sorted
    });
  });
});
