import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { ExecutionRepository } from './repositories/execution.repository';
import { demoteToScheduled } from './statements/demote-to-scheduled.sql';

const NOW = new Date('2026-12-02T09:00:00Z');
const LATER = new Date(NOW.getTime() + 30_000);

/**
 * Each statement is sent its two rows higher id first while another transaction holds the higher
 * one. Taking locks in id order, it has locked the lower row before it waits; in the order sent,
 * it waits first and the lower row is free, which is how two such statements deadlock.
 */
describe('statements over several jobs lock them in id order, whatever order they are sent in (Postgres)', () => {
  let db: TestDatabase;
  let repo: ExecutionRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    // Enough rows that the planner reaches each job through the primary key, in the order of the
    // ids sent, as in production (on a handful of rows it reads the table in its physical order).
    await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) SELECT 1, 'filler-' || g, 'noop', $1, 'c' FROM generate_series(1, 20000) g`, [NOW]);
    await db.dataSource.query('ANALYZE jobs');
    repo = new ExecutionRepository(db.dataSource);
  });
  afterAll(() => db.drop());

  async function lowerLockedWhileWaiting(state: 'q' | 'r', send: (high: string, low: string) => Promise<unknown>): Promise<boolean> {
    const rows = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts, claimed_by, lease_until)
       SELECT 1, 'lock-order-' || gen_random_uuid(), 'noop', $1, $2, $3, $4, $5 FROM generate_series(1, 2) RETURNING id::text AS id`,
      [NOW, state, state === 'r' ? 1 : 0, state === 'r' ? 7 : null, state === 'r' ? LATER : null],
    );
    const [low, high] = rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b));
    const holder = db.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT id FROM jobs WHERE id = $1 FOR UPDATE`, [high]);
      const sent = send(high, low);
      await someoneWaitsOnALock(db.dataSource);
      const lowFree = await db.dataSource
        .transaction((tx) => tx.query(`SELECT id FROM jobs WHERE id = $1 FOR UPDATE NOWAIT`, [low]))
        .then(() => true, (err: Error & { code?: string }) => {
          if (err.code === '55P03') return false;
          throw err;
        });
      await holder.rollbackTransaction();
      await sent;
      return !lowFree;
    } finally {
      await holder.release();
    }
  }

  it('the claim', async () => {
    expect(await lowerLockedWhileWaiting('q', (high, low) => repo.claim([high, low], NOW, LATER, 7))).toBe(true);
  });

  it('the heartbeat renewal', async () => {
    expect(await lowerLockedWhileWaiting('r', (high, low) => repo.extendLeases([{ id: high, attempt: 1 }, { id: low, attempt: 1 }], LATER))).toBe(true);
  });

  it('the group commit of completions', async () => {
    const record = (id: string) => ({ id, attempt: 1, tenantId: 1, next: 'succeeded' as const, outcome: 'succeeded' as const, startedAt: NOW, finishedAt: NOW, workerId: 'w-1' });
    expect(await lowerLockedWhileWaiting('r', (high, low) => repo.complete([record(high), record(low)], NOW))).toBe(true);
  });

  it('the release at shutdown', async () => {
    expect(await lowerLockedWhileWaiting('r', (high, low) => repo.release([{ id: high, attempt: 1 }, { id: low, attempt: 1 }], NOW, 'w-1', [NOW, NOW]))).toBe(true);
  });

  it('the demotion of rows whose hand-off failed', async () => {
    expect(await lowerLockedWhileWaiting('q', (high, low) => demoteToScheduled(db.dataSource, [{ id: high, runAt: NOW }, { id: low, runAt: NOW }]))).toBe(true);
  });
});
