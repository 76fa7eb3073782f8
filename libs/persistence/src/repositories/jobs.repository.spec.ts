import { noOneWaitsOnALock, someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { JOB_COLUMNS, type JobRecord, type JobRow, rowToJob } from '../job-record';
import type { Db } from '../sql';
import { COLD_CLAIM_SQL } from '../statements/cold-claim.sql';
import { type InsertOutcome, JobsRepository, type NewJob } from './jobs.repository';

const T1 = 1;
const T2 = 2;
const HOUR = 3600e3;
const NOW = new Date('2026-11-29T10:00:00Z');

function job(key: string, over: Partial<NewJob> = {}): NewJob {
  return { kind: 'noop', key, runAt: new Date(NOW.getTime() + 48 * HOUR), payload: { n: key }, state: 'scheduled', ...over };
}

describe('JobsRepository (Postgres)', () => {
  let db: TestDatabase;
  let jobs: JobsRepository;

  // Rows are read back with plain SQL, independently of the statement under test.
  async function rowById(id: string, q: Db = db.dataSource): Promise<JobRecord | null> {
    const rows: JobRow[] = await q.query(`SELECT ${JOB_COLUMNS} FROM jobs j WHERE j.id = $1`, [id]);
    return rows.length ? rowToJob(rows[0]) : null;
  }
  async function rowByKey(tenantId: number, key: string, q: Db = db.dataSource): Promise<JobRecord | null> {
    const rows: JobRow[] = await q.query(`SELECT ${JOB_COLUMNS} FROM jobs j WHERE j.tenant_id = $1 AND j.key = $2`, [tenantId, key]);
    return rows.length ? rowToJob(rows[0]) : null;
  }
  /** insertBatch for the cases where every outcome carries a job (no key here is retired). */
  async function insertJobs(...args: Parameters<JobsRepository['insertBatch']>): Promise<Exclude<InsertOutcome, { status: 'retired' }>[]> {
    return (await jobs.insertBatch(...args)).map((o) => {
      if (o.status === 'retired') throw new Error(`unexpected retired key ${o.key}`);
      return o;
    });
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    jobs = new JobsRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  describe('insertBatch', () => {
    it('creates every new job and returns them in input order with ids and decoded creation time', async () => {
      const before = Date.now();
      const out = await insertJobs(T1, [job('a1'), job('a2', { state: 'queued', maxAttempts: 7, payload: undefined })]);
      expect(out.map((o) => [o.status, o.job.key, o.job.state])).toEqual([
        ['created', 'a1', 'scheduled'],
        ['created', 'a2', 'queued'],
      ]);
      expect(out[0].job.id).toMatch(/^\d+$/);
      expect(out[0].job.createdAt.getTime()).toBeGreaterThanOrEqual(before - 5);
      // What insertBatch reports for a created job is exactly the stored row.
      for (const o of out) expect(await rowById(o.job.id)).toEqual(o.job);
      expect(await rowById(out[1].job.id)).toMatchObject({ maxAttempts: 7, payload: null, attempts: 0, tenantId: T1 });
      expect(await rowById(out[0].job.id)).toMatchObject({ maxAttempts: 3, payload: { n: 'a1' }, state: 'scheduled' });
    });

    it('reports a key that already exists as existing, with the stored row, untouched', async () => {
      const [first] = await insertJobs(T1, [job('b1', { payload: { v: 1 } })]);
      const out = await insertJobs(T1, [job('b2'), job('b1', { payload: { v: 2 }, kind: 'http' }), job('b3')]);
      expect(out.map((o) => o.status)).toEqual(['created', 'existing', 'created']);
      expect(out[1].job).toEqual(first.job);
      expect(out[1].job).toMatchObject({ kind: 'noop', payload: { v: 1 } });
      expect(await rowByKey(T1, 'b1')).toEqual(first.job);
    });

    it('lets the first occurrence of a key repeated inside one batch win', async () => {
      const out = await insertJobs(T1, [job('c1', { payload: { v: 1 } }), job('c2'), job('c1', { payload: { v: 2 } })]);
      expect(out.map((o) => o.status)).toEqual(['created', 'created', 'existing']);
      expect(out[2].job.id).toBe(out[0].job.id);
      expect((await rowByKey(T1, 'c1'))?.payload).toEqual({ v: 1 });
    });

    it('scopes keys per tenant, and reports only the own tenant’s row as existing', async () => {
      const [a] = await insertJobs(T1, [job('shared', { payload: { t: 1 } })]);
      const [b] = await insertJobs(T2, [job('shared', { payload: { t: 2 } })]);
      expect([a.status, b.status]).toEqual(['created', 'created']);
      expect(a.job.id).not.toBe(b.job.id);
      expect(await rowById(b.job.id)).toMatchObject({ tenantId: T2, key: 'shared', payload: { t: 2 } });
      const [again] = await insertJobs(T2, [job('shared')]);
      expect(again).toEqual({ status: 'existing', job: b.job });
      expect(await rowByKey(T1, 'shared')).toEqual(a.job);
    });

    it('gives concurrent batches with the same keys one row per key', async () => {
      const keys = Array.from({ length: 200 }, (_, i) => `race-${i}`);
      const [x, y] = await Promise.all([insertJobs(T1, keys.map((k) => job(k))), insertJobs(T1, [...keys].reverse().map((k) => job(k)))]);
      const created = [...x, ...y].filter((o) => o.status === 'created').length;
      expect(created).toBe(200);
      const ids = new Map(x.map((o) => [o.job.key, o.job.id]));
      for (const o of y) expect(o.job.id).toBe(ids.get(o.job.key));
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND key LIKE 'race-%'`, [T1]);
      expect(n).toBe(200);
    });

    it('takes 1000 jobs in one call and refuses more', async () => {
      const out = await insertJobs(T1, Array.from({ length: 1000 }, (_, i) => job(`k-${i}`)));
      expect(out.filter((o) => o.status === 'created')).toHaveLength(1000);
      await expect(insertJobs(T1, Array.from({ length: 1001 }, (_, i) => job(`m-${i}`)))).rejects.toThrow(RangeError);
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND key LIKE 'm-%'`, [T1]);
      expect(n).toBe(0);
      expect(await insertJobs(T1, [])).toEqual([]);
    });

    it.each([
      ['on its own connection (the unique-violation retry)', 'mid', (items: NewJob[]) => insertJobs(T1, items)],
      // ON CONFLICT skipped the key and the caller's snapshot hides it: it is read back by key.
      ['inside a caller transaction', 'mtx', (items: NewJob[]) => db.dataSource.transaction((tx) => insertJobs(T1, items, tx))],
    ])('reports a key another transaction commits mid-statement as existing, %s', async (_how, prefix, insert) => {
      const qr = db.dataSource.createQueryRunner();
      await qr.startTransaction();
      try {
        await qr.query(`INSERT INTO jobs (tenant_id, key, kind, run_at) VALUES ($1, $2, 'other', now())`, [T1, `${prefix}-1`]);
        const pending = insert([job(`${prefix}-0`), job(`${prefix}-1`), job(`${prefix}-2`)]);
        // Wait until the batch is blocked on the uncommitted key, then let the other side win.
        await someoneWaitsOnALock(db.dataSource);
        await qr.commitTransaction();
        const out = await pending;
        expect(out.map((o) => [o.status, o.job.kind])).toEqual([
          ['created', 'noop'],
          ['existing', 'other'],
          ['created', 'noop'],
        ]);
        for (const [n, o] of out.entries()) expect(await rowByKey(T1, `${prefix}-${n}`)).toEqual(o.job);
      } finally {
        await qr.release();
      }
    });

    it('writes nothing for a caller that stopped waiting (`over`): before its connection, or while it waits on a lock', async () => {
      await expect(jobs.insertBatch(T1, [job('over-0')], undefined, AbortSignal.abort(new Error('answered already')))).rejects.toThrow('answered already');
      const locker = db.dataSource.createQueryRunner();
      await locker.startTransaction();
      try {
        await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
        const stop = new AbortController();
        const pending = jobs.insertBatch(T1, [job('over-1')], undefined, stop.signal);
        await someoneWaitsOnALock(db.dataSource);
        stop.abort(new Error('deadline passed'));
        await expect(pending).rejects.toThrow('deadline passed');
        // Its backend ends (its connection closed, within a second) before the lock goes: else the insert would run after the answer.
        await noOneWaitsOnALock(db.dataSource);
      } finally {
        await locker.rollbackTransaction();
        await locker.release();
      }
      await insertJobs(T1, [job('over-after')]); // a later insert goes through, and any earlier one would have too
      expect([await rowByKey(T1, 'over-0'), await rowByKey(T1, 'over-1')]).toEqual([null, null]);
    });

    it('composes with a caller transaction and rolls back with it', async () => {
      await insertJobs(T1, [job('tx-old')]);
      await expect(
        db.dataSource.transaction(async (tx) => {
          const out = await insertJobs(T1, [job('tx-new'), job('tx-old')], tx);
          expect(out.map((o) => o.status)).toEqual(['created', 'existing']);
          expect(await rowByKey(T1, 'tx-new', tx)).toEqual(out[0].job);
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await rowByKey(T1, 'tx-new')).toBeNull();
      expect(await rowByKey(T1, 'tx-old')).not.toBeNull();
    });

    it('keeps array-literal look-alikes as plain keys', async () => {
      const keys = ['NULL', 'null', '{a,b}', 'a,b', ' spaced '];
      const out = await insertJobs(T1, keys.map((k) => job(k)));
      expect(out.map((o) => o.job.key)).toEqual(keys);
      expect(out.map((o) => o.status)).toEqual(keys.map(() => 'created'));
      const stored = await Promise.all(out.map((o) => rowById(o.job.id)));
      expect(stored.map((j) => j?.key)).toEqual(keys);
    });

    it('fails a batch with an out-of-range value without echoing its payloads in the error', async () => {
      const err: unknown = await insertJobs(T1, [job('bad-1', { maxAttempts: 100000, payload: { secret: 's3cr3t' } })]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(JSON.stringify(err)).not.toContain('s3cr3t');
      expect(String((err as { parameters?: unknown }).parameters)).toMatch(/redacted/);
      expect(await rowByKey(T1, 'bad-1')).toBeNull();
    });

    it('refuses an invalid run time before touching the database', async () => {
      await expect(insertJobs(T1, [job('nan-0'), job('nan-1', { runAt: new Date(NaN) })])).rejects.toThrow(/item 1: runAt/);
      expect(await rowByKey(T1, 'nan-0')).toBeNull();
    });

    it('keeps unicode and quote-heavy keys and payloads intact', async () => {
      const key = `inv:"ü"\\'${'x'.repeat(5)}`;
      const [o] = await insertJobs(T1, [job(key, { payload: { s: 'a"b\\c\u2028', n: [1, null, true] } })]);
      expect(await rowByKey(T1, key)).toMatchObject({ id: o.job.id, payload: { s: 'a"b\\c\u2028', n: [1, null, true] } });
    });
  });

  describe('promotion', () => {
    it('plans the claim as a range scan of jobs_cold_due', async () => {
      await db.dataSource.query('ANALYZE jobs');
      const plan = await db.dataSource.transaction(async (tx) => {
        await tx.query('SET LOCAL enable_seqscan = off');
        const rows: { 'QUERY PLAN': string }[] = await tx.query(`EXPLAIN ${COLD_CLAIM_SQL}`, [NOW, 100]);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      expect(plan).toMatch(/Index Scan using jobs_cold_due/);
      expect(plan).not.toMatch(/Sort/);
    });
  });
});
