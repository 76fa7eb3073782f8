import { createHash } from 'node:crypto';
import { utcDay } from '@almanac/domain';
import { JobsRepository, RetentionRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { insertJobs } from '@almanac/testing/promoter-rows';
import { FULL_WALK_EVERY_MS, RetentionSweep } from './retention.sweep';
import { createTenants } from '@almanac/testing/tenant-rows';

const DAY = 86_400e3;
/** The database's time at each test's start: the sweep judges retention and days by its clock. */
let NOW: Date;
const at = (ms: number) => new Date(NOW.getTime() + ms);
/** The UTC day `days` after NOW's, as the API reports days. */
const dayAt = (days: number) => utcDay(at(days * DAY));

describe('RetentionSweep (Postgres)', () => {
  let db: TestDatabase;
  let a: number;
  let b: number;
  let metrics: SweepMetrics;

  const sweep = (o: { batchSize?: number; maxPerRun?: number } = {}) =>
    new RetentionSweep(new RetentionRepository(db.dataSource), { defaultSeconds: 30 * 86_400, defaultKeyReservation: 400 * 86_400, batchSize: o.batchSize ?? 1000, maxPerRun: o.maxPerRun ?? 100_000 }, metrics);
  /** `count` finished jobs in `state`, run and finished `daysAgo` days before NOW, each with one attempt. */
  const finished = async (tenantId: number, state: 'd' | 'x' | 'c', count: number, daysAgo: number, prefix: string = state) => {
    const ids = await insertJobs(db.dataSource, { tenantId, count, start: at(-daysAgo * DAY), state, prefix, attempts: 1 });
    await db.dataSource.query(`UPDATE jobs SET finished_at = run_at + interval '1 second' WHERE id = ANY($1::bigint[])`, [ids]);
    await db.dataSource.query(
      `INSERT INTO job_attempts (job_id, started_at, finished_at, tenant_id, attempt, outcome) SELECT id, run_at, finished_at, tenant_id, 1, 'succeeded' FROM jobs WHERE id = ANY($1::bigint[])`,
      [ids],
    );
    return ids;
  };
  const left = async (ids: string[]) =>
    (await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::bigint[])`, [ids]))[0].n;
  const attemptsLeft = async (ids: string[]) =>
    (await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM job_attempts WHERE job_id = ANY($1::bigint[])`, [ids]))[0].n;
  const policyOf = async (repo: RetentionRepository, tenantId: number) => (await repo.policies(30 * 86_400, 400 * 86_400)).find((p) => p.tenantId === tenantId)!;
  const keyOf = async (id: string) => (await db.dataSource.query<{ key: string }[]>(`SELECT key FROM jobs WHERE id = $1`, [id]))[0].key;

  beforeAll(async () => {
    db = await createTestDatabase();
    [a, b] = await createTenants(db.dataSource, 'a', 'b');
  });
  beforeEach(async () => {
    NOW = (await db.dataSource.query<{ t: Date }[]>(`SELECT statement_timestamp() AS t`))[0].t;
    metrics = new SweepMetrics(new MetricsService());
    await db.dataSource.query('TRUNCATE jobs, job_attempts, job_effects, retired_keys, bulk_operations, bulk_operation_chunks');
    await db.dataSource.query('UPDATE tenants SET retention_seconds = NULL, frees_keys = false, key_reservation_seconds = NULL, keys_reserved_forever = false');
  });
  afterAll(async () => db.drop());

  it('removes finished jobs past retention with their attempts and effects, and nothing else', async () => {
    const old = [...(await finished(a, 'd', 30, 31)), ...(await finished(a, 'x', 5, 40)), ...(await finished(a, 'c', 5, 60))];
    const recent = await finished(a, 'd', 10, 29);
    // Unfinished rows are never removed, however old their run time.
    const unfinished = [
      ...(await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(-90 * DAY), state: 'q' })),
      ...(await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(-90 * DAY), state: 'r', leaseUntil: at(-89 * DAY) })),
      ...(await insertJobs(db.dataSource, { tenantId: a, count: 3, start: at(-90 * DAY), state: 's' })),
    ];
    // A cancelled job that was due in the future waits for its run time as well.
    const futureCancelled = await insertJobs(db.dataSource, { tenantId: a, count: 2, start: at(DAY), state: 'c' });
    await db.dataSource.query(`UPDATE jobs SET finished_at = $2 WHERE id = ANY($1::bigint[])`, [futureCancelled, at(-60 * DAY)]);
    // A job due long ago that finished within the retention (a late retry) is kept.
    const lateFinish = await finished(a, 'd', 2, 40);
    await db.dataSource.query(`UPDATE jobs SET finished_at = $2 WHERE id = ANY($1::bigint[])`, [lateFinish, at(-DAY)]);
    // Effect records expire by their own done_at, unless the job that last touched them is
    // unfinished; one never done (its runner died in the call) by its claim, alike.
    await db.dataSource.query(
      `INSERT INTO job_effects (tenant_id, effect_key, job_id, claimed_at, done_at) VALUES
         ($1, 'mail-old', $2, $3, $3), ($1, 'mail-recent', $2, $4, $4), ($1, 'mail-live-job', $5, $3, $3), ($1, 'mail-claimed', $2, $3, NULL),
         ($1, 'mail-claimed-recent', $2, $4, NULL), ($1, 'mail-claimed-live-job', $5, $3, NULL)`,
      [a, recent[0], at(-31 * DAY), at(-DAY), unfinished[0]],
    );

    const r = await sweep().runOnce(NOW);

    expect(r).toEqual({ removed: 40, behindSeconds: 0, more: false });
    expect(await left(old)).toBe(0);
    expect(await attemptsLeft(old)).toBe(0);
    expect(await left(recent)).toBe(10);
    expect(await attemptsLeft(recent)).toBe(10);
    expect(await left(unfinished)).toBe(9);
    expect(await left(futureCancelled)).toBe(2);
    expect(await left(lateFinish)).toBe(2);
    expect((await db.dataSource.query<{ effect_key: string }[]>(`SELECT effect_key FROM job_effects ORDER BY 1`)).map((r) => r.effect_key)).toEqual([
      'mail-claimed-live-job', 'mail-claimed-recent', 'mail-live-job', 'mail-recent',
    ]);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM retired_keys`))[0].n).toBe(40);
    expect(await metrics.retentionRemoved.get()).toMatchObject({ values: expect.arrayContaining([expect.objectContaining({ labels: { keys: 'reserved' }, value: 40 })]) });
    expect((await sweep().runOnce(NOW)).removed).toBe(0);
  });

  it("keeps each removed job's result digest with its key: SHA-256 of the stored result's text, 16 bytes; none without a result", async () => {
    const [withResult, without] = await finished(a, 'd', 2, 40);
    await db.dataSource.query(`UPDATE jobs SET result = '{"charged": true, "amount": 4200}' WHERE id = $1`, [withResult]);
    const rows = await db.dataSource.query<{ id: string; key: string; text: string | null }[]>(`SELECT id::text AS id, key, result::text AS text FROM jobs WHERE id = ANY($1::bigint[])`, [[withResult, without]]);
    const expected = Object.fromEntries(rows.map((r) => [r.key, r.text === null ? null : createHash('sha256').update(r.text, 'utf8').digest('hex').slice(0, 32)]));
    await sweep().runOnce(NOW);
    const kept = await db.dataSource.query<{ key: string; digest: string | null }[]>(`SELECT key, encode(result_digest, 'hex') AS digest FROM retired_keys`);
    expect(Object.fromEntries(kept.map((r) => [r.key, r.digest]))).toEqual(expected);
    expect(Object.values(expected).filter((d) => d !== null)).toHaveLength(1);
  });

  it("removes the tenant's bulk operations that ended before its cutoff; open ones and another tenant's stay", async () => {
    const op = async (tenantId: number, state: string, finishedDaysAgo: number | null) =>
      (await db.dataSource.query<{ id: string }[]>(
        `INSERT INTO bulk_operations (tenant_id, action, filter, state, finished_at) VALUES ($1, 'cancel', '{}', $2, $3) RETURNING id::text AS id`,
        [tenantId, state, finishedDaysAgo === null ? null : at(-finishedDaysAgo * DAY)],
      ))[0].id;
    const gone = [await op(a, 'done', 31), await op(a, 'failed', 45), await op(a, 'cancelled', 40)];
    const kept = [await op(a, 'done', 29), await op(a, 'running', null), await op(a, 'pending', null), await op(b, 'done', 45)];
    await db.dataSource.query(`UPDATE tenants SET retention_seconds = $2 WHERE id = $1`, [b, 60 * 86_400]);
    await sweep().runOnce(NOW);
    const ids = (await db.dataSource.query<{ id: string }[]>(`SELECT id::text AS id FROM bulk_operations`)).map((r) => r.id);
    expect(ids.sort()).toEqual(kept.sort());
    expect(ids).not.toEqual(expect.arrayContaining(gone));
  });

  it("removes the tenant's signing secrets that stopped being live before its cutoff; live ones and another tenant's stay", async () => {
    const secret = async (tenantId: number, expiredDaysAgo: number | null) =>
      (await db.dataSource.query<{ id: number }[]>(
        `INSERT INTO tenant_signing_secrets (tenant_id, secret, expires_at) VALUES ($1, 'whsec_test', $2) RETURNING id`,
        [tenantId, expiredDaysAgo === null ? null : at(-expiredDaysAgo * DAY)],
      ))[0].id;
    await secret(a, 31);
    const kept = [await secret(a, 29), await secret(a, -1), await secret(a, null), await secret(b, 45)];
    await db.dataSource.query(`UPDATE tenants SET retention_seconds = $2 WHERE id = $1`, [b, 60 * 86_400]);
    await sweep().runOnce(NOW);
    const ids = (await db.dataSource.query<{ id: number }[]>(`SELECT id FROM tenant_signing_secrets ORDER BY id`)).map((r) => r.id);
    expect(ids).toEqual(kept);
  });

  it("keeps each tenant's own retention, and a replay of a removed key gets what happened unless the tenant frees keys", async () => {
    await db.dataSource.query(`UPDATE tenants SET retention_seconds = 3600 WHERE id = $1`, [a]);
    await db.dataSource.query(`UPDATE tenants SET retention_seconds = 7200, frees_keys = true WHERE id = $1`, [b]);
    const [ofA] = await finished(a, 'x', 1, 0.1); // 2.4 h ago: past a's hour
    const [ofB] = await finished(b, 'd', 1, 0.1); // past b's two hours
    const [keepB] = await finished(b, 'd', 1, 0.05); // 1.2 h ago: within b's two hours
    const keyA = await keyOf(ofA);
    const keyB = await keyOf(ofB);

    expect((await sweep().runOnce(NOW)).removed).toBe(2);
    expect(await left([ofA, ofB, keepB])).toBe(1);

    const jobs = new JobsRepository(db.dataSource);
    const replay = (tenantId: number, key: string) => jobs.insertBatch(tenantId, [{ kind: 'noop', key, runAt: NOW, state: 'scheduled' }]);
    expect(await replay(a, keyA)).toEqual([{ status: 'retired', key: keyA, removedOn: dayAt(0), state: 'dead', reservedThrough: dayAt(400), resultDigest: null }]);
    // Reserved for its own tenant only, and on the retry path (inside a transaction) as well.
    expect((await replay(b, keyA))[0].status).toBe('created');
    const inTx = await db.dataSource.transaction((tx) => jobs.insertBatch(a, [{ kind: 'noop', key: keyA, runAt: NOW, state: 'scheduled' }], tx));
    expect(inTx[0].status).toBe('retired');
    // b frees its keys: the key names a new job.
    expect((await replay(b, keyB))[0].status).toBe('created');
  });

  it("keeps each removed key reserved for its tenant's time (the default, its own, or forever) and frees it after that day", async () => {
    await db.dataSource.query(`UPDATE tenants SET key_reservation_seconds = $2 WHERE id = $1`, [a, 2 * 86_400]);
    const [ofA] = await finished(a, 'd', 1, 40);
    const [ofB] = await finished(b, 'd', 1, 40);
    const [keyA, keyB] = [await keyOf(ofA), await keyOf(ofB)];
    expect((await sweep().runOnce(NOW)).removed).toBe(2);
    const through = async () =>
      Object.fromEntries(
        (await db.dataSource.query<{ key: string; through: string | null }[]>(`SELECT key, to_char(reserved_through, 'YYYY-MM-DD') AS through FROM retired_keys`)).map((r) => [r.key, r.through]),
      );
    expect(await through()).toEqual({ [keyA]: dayAt(2), [keyB]: dayAt(400) }); // a's two days; b the installation's 400

    const jobs = new JobsRepository(db.dataSource);
    // Days go by the database's clock: they pass here as keyA's reservation moves back a day each.
    const dayPasses = () => db.dataSource.query(`UPDATE retired_keys SET removed_on = removed_on - 1, reserved_through = reserved_through - 1 WHERE key = $1`, [keyA]);
    const replay = async (tenantId: number, key: string) => {
      await sweep().runOnce(NOW);
      return (await jobs.insertBatch(tenantId, [{ kind: 'noop', key, runAt: NOW, state: 'scheduled' }]))[0];
    };
    for (let d = 0; d < 2; d++) await dayPasses();
    expect(await replay(a, keyA)).toMatchObject({ status: 'retired', reservedThrough: dayAt(0) }); // its last day
    expect((await metrics.reservedKeysExpired.get()).values[0]?.value ?? 0).toBe(0);
    // Freed a day late: an insert begun on its last day goes by that day past midnight.
    await dayPasses();
    await sweep().runOnce(NOW);
    expect(await through()).toHaveProperty(keyA);
    await dayPasses();
    expect(await replay(a, keyA)).toMatchObject({ status: 'created' });
    expect((await metrics.reservedKeysExpired.get()).values[0]?.value).toBe(1);
    expect(await through()).toEqual({ [keyB]: dayAt(400) });

    // Forever: no last day, never freed; a change applies to keys removed from then on.
    await db.dataSource.query(`UPDATE tenants SET keys_reserved_forever = true WHERE id = $1`, [b]);
    const later = await keyOf((await finished(b, 'd', 1, 40, 'later'))[0]);
    await sweep().runOnce(NOW);
    expect(await through()).toEqual({ [keyB]: dayAt(400), [later]: null });
  });

  it("keeps a finished job Postgres will not delete (another table's foreign key) and removes the rest of its tenant around it", async () => {
    const ids = await finished(a, 'd', 30, 40);
    await db.dataSource.query(`CREATE TABLE operator_refs (job_id bigint REFERENCES jobs (id))`);
    try {
      await db.dataSource.query(`INSERT INTO operator_refs VALUES ($1)`, [ids[7]]);
      const before = (await metrics.setAside.get()).values.find((v) => v.labels.statement === 'retention')?.value ?? 0;
      const s = sweep({ batchSize: 10 });
      expect((await s.runOnce(NOW)).removed).toBe(29);
      expect(await left(ids)).toBe(1);
      expect(await left([ids[7]])).toBe(1);
      expect((await metrics.setAside.get()).values.find((v) => v.labels.statement === 'retention')?.value).toBe(before + 1);
      expect((await s.runOnce(NOW)).removed).toBe(0); // left out from then on: the next run neither fails nor splits again
      expect((await metrics.setAside.get()).values.find((v) => v.labels.statement === 'retention')?.value).toBe(before + 1);
    } finally {
      await db.dataSource.query(`DROP TABLE operator_refs`);
    }
  });

  it('removes stored schedule payloads nothing points at any more, and keeps the ones a job or its schedule points at', async () => {
    const store = async (tenantId: number) =>
      (await db.dataSource.query<{ id: string }[]>(`INSERT INTO schedule_payloads (tenant_id, schedule_id, payload) VALUES ($1, 1, '{"big": true}') RETURNING id::text AS id`, [tenantId]))[0].id;
    const [unused, byJob, ofOther] = [await store(a), await store(a), await store(b)];
    const [job] = await insertJobs(db.dataSource, { tenantId: a, count: 1, start: at(DAY), state: 's' });
    await db.dataSource.query(`UPDATE jobs SET payload_ref = $2 WHERE id = $1`, [job, byJob]);
    try {
      await sweep().runOnce(NOW);
      const left = (await db.dataSource.query<{ id: string }[]>(`SELECT id::text AS id FROM schedule_payloads ORDER BY id`)).map((r) => r.id);
      expect(left).toEqual([byJob]); // the unused ones of both tenants went, each in its own tenant's turn
      expect(left).not.toContain(unused);
      expect(left).not.toContain(ofOther);
    } finally {
      await db.dataSource.query('TRUNCATE schedule_payloads');
    }
  });

  it('measures how far behind it is from the oldest row it can remove, not from one it set aside', async () => {
    const [poison] = await finished(a, 'd', 1, 60);
    const rest = await finished(a, 'd', 30, 40);
    await db.dataSource.query(`CREATE TABLE operator_refs (job_id bigint REFERENCES jobs (id))`);
    try {
      await db.dataSource.query(`INSERT INTO operator_refs VALUES ($1)`, [poison]);
      const oldest = jest.spyOn(RetentionRepository.prototype, 'oldestExpired');
      const r = await sweep({ batchSize: 10, maxPerRun: 20 }).runOnce(NOW);
      expect(r).toMatchObject({ removed: 20, more: true });
      // Looked for from where the walk got to, not over the rows it passed again (a backlog can be millions).
      expect(oldest.mock.calls.map((c) => c[3])).toEqual([at(-40 * DAY)]);
      expect(await left([poison])).toBe(1);
      // The rows left are 40 days old, 10 past the 30-day cutoff; the one set aside is 60.
      expect(r.behindSeconds).toBeGreaterThan(9 * 86_400);
      expect(r.behindSeconds).toBeLessThan(11 * 86_400);
      expect(await left(rest)).toBe(10);
    } finally {
      jest.restoreAllMocks();
      await db.dataSource.query(`DROP TABLE operator_refs`);
    }
  });

  it('refuses every removed key of its own tenant only, whatever the keys look like and however they are batched', async () => {
    const ids: string[] = [];
    for (const [i, prefix] of ['inv:2026-11-02', 'inv:2026-11-01', 'a', 'zz', 'order:0001', 'm'].entries()) {
      ids.push(...(await finished(i % 3 === 2 ? b : a, (['d', 'x', 'c'] as const)[i % 3], 7, 40 - i, prefix)));
    }
    const removed = await db.dataSource.query<{ tenant_id: number; key: string }[]>(`SELECT tenant_id, key FROM jobs WHERE id = ANY($1::bigint[])`, [ids]);
    for (const batchSize of [3, 5, 11]) await sweep({ batchSize, maxPerRun: 9 }).runOnce(NOW);
    while ((await sweep({ batchSize: 4 }).runOnce(NOW)).removed > 0);
    expect(await left(ids)).toBe(0);
    const jobs = new JobsRepository(db.dataSource);
    for (const r of removed) {
      const other = r.tenant_id === a ? b : a;
      const replay = async (tenantId: number) => (await jobs.insertBatch(tenantId, [{ kind: 'noop', key: r.key, runAt: NOW, state: 'scheduled' }]))[0].status;
      expect([r.key, await replay(r.tenant_id), await replay(other)]).toEqual([r.key, 'retired', 'created']);
    }
  });

  it("walks on from where it got to, never over a backlog it passed again in each batch; a row below that finishes late goes with the next full walk", async () => {
    // A backlog held back by a limit (queued, due long ago) older than the tenant's finished rows.
    const backlog = await insertJobs(db.dataSource, { tenantId: a, count: 40, start: at(-45 * DAY), state: 'q' });
    const old = await finished(a, 'd', 30, 40);
    const repo = new RetentionRepository(db.dataSource);
    const froms: (number | null)[] = [];
    const remove = repo.removeExpired.bind(repo);
    jest.spyOn(repo, 'removeExpired').mockImplementation((...args) => (args[0].tenantId === a && froms.push(args[5]?.from?.getTime() ?? null), remove(...args)));
    const sweepWith = new RetentionSweep(repo, { defaultSeconds: 30 * 86_400, defaultKeyReservation: 400 * 86_400, batchSize: 10, maxPerRun: 100_000 }, metrics);

    expect((await sweepWith.runOnce(NOW)).removed).toBe(30);
    const lastRunAt = async (ids: string[]) => (await db.dataSource.query<{ t: Date }[]>(`SELECT max(run_at) AS t FROM jobs WHERE id = ANY($1::bigint[])`, [ids]))[0].t;
    expect(froms[0]).toBeNull(); // the first walk starts at the tenant's oldest row, then each batch where the last one ended
    expect(froms.slice(1).every((f, i) => f !== null && f >= (froms[i] ?? 0))).toBe(true);
    expect(froms.length).toBe(4);

    // A backlog row runs and finishes; expired by the next run, it lies below where the walk got to.
    await db.dataSource.query(`UPDATE jobs SET state = 'd', finished_at = $2 WHERE id = $1`, [backlog[0], at(-31 * DAY)]);
    froms.length = 0;
    expect((await sweepWith.runOnce(at(60_000))).removed).toBe(0);
    expect(froms[0]).not.toBeNull();
    expect(await left([backlog[0]])).toBe(1);
    expect((await sweepWith.runOnce(at(FULL_WALK_EVERY_MS))).removed).toBe(1);
    expect(await left([backlog[0]])).toBe(0);
    expect(await lastRunAt(backlog)).toEqual(expect.any(Date)); // the rest of the backlog stays
    expect(await left(old)).toBe(0);
  });

  it("cleans up a tenant's effect records, bulk operations and schedule payloads every 10 minutes, not on every run", async () => {
    const effect = (key: string) =>
      db.dataSource.query(`INSERT INTO job_effects (tenant_id, effect_key, job_id, claimed_at, done_at) VALUES ($1, $2, 1, $3, $3)`, [a, key, at(-31 * DAY)]);
    const effects = async () => (await db.dataSource.query<{ effect_key: string }[]>(`SELECT effect_key FROM job_effects ORDER BY 1`)).map((r) => r.effect_key);
    const s = sweep();
    await effect('first');
    await s.runOnce(NOW);
    expect(await effects()).toEqual([]);
    await effect('second');
    await s.runOnce(at(60_000)); // a minute on: each pass reads what is still in use, so not yet
    expect(await effects()).toEqual(['second']);
    await s.runOnce(at(10 * 60_000));
    expect(await effects()).toEqual([]);
  });

  it('stops at its budget, says how far behind it is, and gives the next tenant the next turn', async () => {
    const ofA = await finished(a, 'd', 70, 40);
    const ofB = await finished(b, 'd', 5, 40);
    const s = sweep({ batchSize: 20, maxPerRun: 30 });

    const first = await s.runOnce(NOW);
    // Run 1 spends its 30 on a (rows 40 days old, 10 days past the cutoff).
    expect(first).toMatchObject({ removed: 30, more: true });
    expect(first.behindSeconds).toBeGreaterThan(9 * 86_400);
    expect((await metrics.retentionBehind.get()).values[0].value).toBe(first.behindSeconds);
    expect(await left(ofB)).toBe(5);

    // Run 2 starts with b, which is done before a's remaining rows take the rest of the budget.
    expect(await s.runOnce(NOW)).toMatchObject({ removed: 30, more: true });
    expect(await left(ofB)).toBe(0);
    expect(await left(ofA)).toBe(15);

    expect(await s.runOnce(NOW)).toEqual({ removed: 15, more: false, behindSeconds: 0 });
    expect((await metrics.retentionBehind.get()).values[0].value).toBe(0);
  });

  it('refuses a replay of a key whose job is being removed right now: the replay waits for the removal, then hears "retired"', async () => {
    const [id] = await finished(a, 'd', 1, 40);
    const key = await keyOf(id);
    const repo = new RetentionRepository(db.dataSource);
    const policy = await policyOf(repo, a);
    const removal = db.dataSource.createQueryRunner();
    await removal.startTransaction();
    try {
      expect((await repo.removeExpired(policy, at(-30 * DAY), 10, dayAt(0), removal.manager)).removed).toBe(1);
      // The replay's INSERT meets the row being deleted on the unique index and waits for it.
      const replay = new JobsRepository(db.dataSource).insertBatch(a, [{ kind: 'noop', key, runAt: NOW, state: 'scheduled' }]);
      await someoneWaitsOnALock(db.dataSource);
      await removal.commitTransaction();
      expect(await replay).toEqual([{ status: 'retired', key, removedOn: dayAt(0), state: 'succeeded', reservedThrough: dayAt(400), resultDigest: null }]);
    } finally {
      if (removal.isTransactionActive) await removal.rollbackTransaction();
      await removal.release();
    }
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND key = $2`, [a, key]))[0].n).toBe(0);
  });

  it("goes on with the other tenants when one tenant's removal fails, and still reports the failure", async () => {
    const ofA = await finished(a, 'd', 3, 40);
    const ofB = await finished(b, 'd', 3, 40);
    await db.dataSource.query(`CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$`);
    await db.dataSource.query(`CREATE TRIGGER refuse_a BEFORE DELETE ON jobs FOR EACH ROW WHEN (OLD.tenant_id = ${a}) EXECUTE FUNCTION refuse_delete()`);
    try {
      const s = sweep();
      await expect(s.runOnce(NOW)).rejects.toThrow(/disk full/);
      expect(await left(ofB)).toBe(0);
      expect(await left(ofA)).toBe(3);
    } finally {
      await db.dataSource.query(`DROP TRIGGER refuse_a ON jobs`);
      await db.dataSource.query(`DROP FUNCTION refuse_delete()`);
    }
    expect((await sweep().runOnce(NOW)).removed).toBe(3);
  });
});
