import { DEFAULT_MAX_STEPS, nextOccurrences, parseSchedule } from '@almanac/domain';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { ExecutionRepository, JobQueriesRepository, PAYLOAD_BY_REFERENCE_BYTES, RecurringRepository, RetentionRepository, SchedulesRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import { Logger } from '@nestjs/common';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { RecurringSweep } from './recurring.sweep';
import { SchedulePlanner } from './schedule-planner';

const HOUR = 3600e3;
const DAY = 24 * HOUR;
const NOW = new Date('2026-11-29T10:20:00Z');
const TOLERANCE = 5 * 60e3;

interface ScheduleSeed {
  cron?: string;
  timezone?: string;
  nextRunAt: Date | null;
  missed?: string;
  paused?: boolean;
  payload?: unknown;
  tenantId?: number;
}

describe('RecurringSweep (Postgres)', () => {
  let db: TestDatabase;
  let repo: RecurringRepository;
  let metrics: SweepMetrics;

  const sweep = (
    over: {
      batchSize?: number; maxPerRun?: number; concurrency?: number; missedCap?: number; onMaterialised?: (now: Date) => Promise<unknown>;
      maxBatchRows?: number; maxBatchBytes?: number; maxPerTenantPerRun?: number; nearMs?: number;
    } = {},
  ) =>
    new RecurringSweep(
      repo,
      new SchedulePlanner({ missedCap: over.missedCap ?? 100, lateToleranceMs: TOLERANCE }),
      {
        horizonMs: DAY, batchSize: over.batchSize ?? 1000, maxPerRun: over.maxPerRun ?? 1e6, concurrency: over.concurrency ?? 1,
        maxBatchRows: over.maxBatchRows ?? 20_000, maxBatchBytes: over.maxBatchBytes ?? 16 * 1024 * 1024, maxPerTenantPerRun: over.maxPerTenantPerRun ?? 1e6,
        nearMs: over.nearMs ?? 10 * 60e3,
      },
      metrics,
      over.onMaterialised,
    );

  async function schedule(seed: ScheduleSeed): Promise<string> {
    const [row] = await db.dataSource.query<{ id: string }[]>(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, missed, paused, next_run_at, max_attempts)
       VALUES ($1, $2, 'noop', $3, $4, $5::jsonb, $6, $7, $8, 5) RETURNING id::text AS id`,
      [
        seed.tenantId ?? 1,
        `s-${Math.random().toString(36).slice(2)}`,
        seed.cron ?? '0 * * * *',
        seed.timezone ?? 'UTC',
        seed.payload === undefined ? null : JSON.stringify(seed.payload),
        seed.missed ?? 'skip',
        seed.paused ?? false,
        seed.nextRunAt,
      ],
    );
    return row.id;
  }

  async function occurrences(id: string): Promise<{ key: string; run_at: Date; state: string }[]> {
    return db.dataSource.query(
      `SELECT key, run_at, state FROM jobs WHERE key LIKE $1 ORDER BY run_at`,
      [`schedule:${id}:%`],
    );
  }

  async function nextRunAt(id: string): Promise<Date | null> {
    const [row] = await db.dataSource.query<{ next_run_at: Date | null }[]>(`SELECT next_run_at FROM schedules WHERE id = $1`, [id]);
    return row.next_run_at;
  }

  const iso = (rows: { run_at: Date }[]) => rows.map((r) => r.run_at.toISOString());
  /** The database's time: schedule edits go by it. */
  const dbTime = async () => (await db.dataSource.query<{ now: Date }[]>(`SELECT now()`))[0].now;
  const nextHour = (t: Date) => new Date(Math.floor(t.getTime() / HOUR) * HOUR + HOUR);

  beforeAll(async () => {
    Logger.overrideLogger(false);
    db = await createTestDatabase();
    repo = new RecurringRepository(db.dataSource);
    metrics = new SweepMetrics(new MetricsService());
  });
  beforeEach(async () => db.dataSource.query('TRUNCATE jobs, schedules'));
  afterAll(async () => db.drop());

  it('materialises every occurrence inside the hot horizon as a scheduled row and advances next_run_at', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), payload: { report: 'daily' } });
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ schedules: 1, inserted: 24, duplicates: 0, occurrences: { materialised: 24, missed: 0, skipped: 0 } });
    const rows = await occurrences(id);
    expect(rows[0]).toEqual({ key: `schedule:${id}:2026-11-29T11:00:00Z`, run_at: new Date('2026-11-29T11:00:00Z'), state: 's' });
    expect(rows.at(-1)?.run_at).toEqual(new Date('2026-11-30T10:00:00Z'));
    expect(await nextRunAt(id)).toEqual(new Date('2026-11-30T11:00:00Z'));
    const [job] = await db.dataSource.query(`SELECT payload, max_attempts, kind, tenant_id FROM jobs WHERE key = $1`, [rows[0].key]);
    expect(job).toEqual({ payload: { report: 'daily' }, max_attempts: 5, kind: 'noop', tenant_id: 1 });
  });

  it('stores a large payload once per version; its occurrences point at it and read it through the claim and the view', async () => {
    const big = { report: 'monthly', blob: 'x'.repeat(PAYLOAD_BY_REFERENCE_BYTES) };
    const start = await dbTime(); // edited below, by the database's clock
    const id = await schedule({ nextRunAt: nextHour(start), payload: big });
    const small = await schedule({ nextRunAt: nextHour(start), payload: { report: 'daily' } });
    const rowsOf = (sid: string) =>
      db.dataSource.query<{ id: string; payload: unknown; ref: string | null }[]>(
        `SELECT id::text AS id, payload, payload_ref::text AS ref FROM jobs WHERE key LIKE $1 ORDER BY run_at`, [`schedule:${sid}:%`],
      );
    const versions = async () => (await db.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM schedule_payloads`))[0].n;
    try {
      await sweep().runOnce(start);
      const rows = await rowsOf(id);
      expect(rows).toHaveLength(24);
      expect(rows.filter((r) => r.payload === null && r.ref !== null)).toHaveLength(24);
      expect(new Set(rows.map((r) => r.ref)).size).toBe(1);
      expect(await versions()).toBe(1);
      expect((await rowsOf(small)).every((r) => r.ref === null && (r.payload as { report: string }).report === 'daily')).toBe(true);
      // Read back whole: by the worker's claim and by the API's view.
      expect((await new JobQueriesRepository(db.dataSource).findForTenant(1, rows[1].id))?.payload).toEqual(big);
      await db.dataSource.query(`UPDATE jobs SET state = 'q', run_at = now() - interval '1 second' WHERE id = $1`, [rows[0].id]);
      const claim = await new ExecutionRepository(db.dataSource).claim([rows[0].id], new Date(), new Date(Date.now() + 30_000), 7);
      expect(claim.claimed.map((c) => c.payload)).toEqual([big]);
      // A new payload is a new version: the rows not started are made again with it; the running one keeps its own.
      const changed = { ...big, report: 'quarterly' };
      await new SchedulesRepository(db.dataSource).update(1, id, { payload: changed });
      expect(await sweep().runOnce(await dbTime())).toMatchObject({ inserted: 23 }); // made again
      const after = await rowsOf(id);
      const made = after.filter((r) => r.id !== rows[0].id);
      expect(after.filter((r) => r.ref === rows[0].ref)).toHaveLength(1);
      expect(made).toHaveLength(23);
      expect(new Set(made.map((r) => r.ref)).size).toBe(1);
      expect(made[0].ref).not.toBe(rows[0].ref);
      expect((await new JobQueriesRepository(db.dataSource).findForTenant(1, made[0].id))?.payload).toEqual(changed);
      expect(await versions()).toBe(2);
      // Retention removes a version once nothing points at it: the old one when its last row goes.
      const retention = new RetentionRepository(db.dataSource);
      expect(await retention.removeUnusedSchedulePayloads(1, 100)).toBe(0);
      await db.dataSource.query(`DELETE FROM jobs WHERE payload_ref = $1`, [rows[0].ref]);
      expect(await retention.removeUnusedSchedulePayloads(1, 100)).toBe(1);
      expect(await versions()).toBe(1);
      expect((await new JobQueriesRepository(db.dataSource).findForTenant(1, made[0].id))?.payload).toEqual(changed);
    } finally {
      await db.dataSource.query('TRUNCATE schedule_payloads');
    }
  });

  it('is a no-op the second time, and re-materialising the same occurrences inserts nothing', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z') });
    await sweep().runOnce(NOW);
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0, inserted: 0 });
    // A crashed run that never advanced the cursor: same keys again.
    await db.dataSource.query(`UPDATE schedules SET next_run_at = '2026-11-29T11:00:00Z' WHERE id = $1`, [id]);
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 1, inserted: 0, duplicates: 24 });
    expect(await occurrences(id)).toHaveLength(24);
  });

  it("an occurrence whose key retention retired is skipped, not a failure of every tenant's batch", async () => {
    const mine = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    const theirs = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 2 });
    await sweep().runOnce(NOW);
    // Retention removed tenant 1's first occurrence (its key retired), and the schedule comes round to it again (a resume).
    const [first] = await occurrences(mine);
    await db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) SELECT tenant_id, key, current_date, 'd' FROM jobs WHERE key = $1`, [first.key]);
    await db.dataSource.query(`DELETE FROM jobs`);
    await db.dataSource.query(`UPDATE schedules SET next_run_at = '2026-11-29T11:00:00Z'`);
    try {
      await sweep().runOnce(NOW);
      expect((await occurrences(mine)).map((r) => r.key)).not.toContain(first.key);
      expect(await occurrences(mine)).toHaveLength(23);
      expect(await occurrences(theirs)).toHaveLength(24);
    } finally {
      await db.dataSource.query(`TRUNCATE retired_keys`);
    }
  });

  it('materialises a batch again when a key it inserts is retired while the insert waits on the old row', async () => {
    const mine = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    await sweep().runOnce(NOW);
    const [first] = await occurrences(mine);
    await db.dataSource.query(`UPDATE jobs SET state = 'd', finished_at = now() WHERE key = $1`, [first.key]);
    await db.dataSource.query(`UPDATE schedules SET next_run_at = '2026-11-29T11:00:00Z'`);
    // Retention removes the finished occurrence and retires its key, and has not committed when
    // the sweep's insert meets the old row: the insert waits, then finds the row gone.
    const removal = db.dataSource.createQueryRunner();
    await removal.startTransaction();
    try {
      await removal.query(`WITH gone AS (DELETE FROM jobs WHERE key = $1 RETURNING tenant_id, key)
        INSERT INTO retired_keys (tenant_id, key, removed_on, state) SELECT tenant_id, key, current_date, 'd' FROM gone`, [first.key]);
      const run = sweep().runOnce(NOW);
      await someoneWaitsOnALock(db.dataSource);
      await removal.commitTransaction();
      expect(await run).toMatchObject({ schedules: 1, inserted: 0, duplicates: 24 });
      expect((await occurrences(mine)).map((r) => r.key)).not.toContain(first.key);
    } finally {
      if (removal.isTransactionActive) await removal.rollbackTransaction();
      await removal.release();
      await db.dataSource.query(`TRUNCATE retired_keys`);
    }
  });

  it("sets aside (pauses, with lastError) a schedule whose occurrences Postgres refuses, and materialises every other tenant's", async () => {
    const poison = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    const mine = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 1 });
    const theirs = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), tenantId: 2 });
    // A value Postgres refuses for the poison schedule's rows only (an operator's trigger, a value out of range).
    await db.dataSource.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.key LIKE 'schedule:${poison}:%' THEN RAISE EXCEPTION 'out of range' USING ERRCODE = '22003'; END IF; RETURN NEW; END $$`);
    await db.dataSource.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    try {
      const before = (await metrics.setAside.get()).values.find((v) => v.labels.statement === 'recurring')?.value ?? 0;
      expect(await sweep().runOnce(NOW)).toMatchObject({ inserted: 48 });
      expect(await occurrences(mine)).toHaveLength(24);
      expect(await occurrences(theirs)).toHaveLength(24);
      expect(await occurrences(poison)).toHaveLength(0);
      const [row] = await db.dataSource.query(`SELECT paused, last_error FROM schedules WHERE id = $1`, [poison]);
      expect(row).toEqual({ paused: true, last_error: expect.stringMatching(/^SetAsideError: .*SQLSTATE 22003.*resuming it tries again$/) });
      expect((await metrics.setAside.get()).values.find((v) => v.labels.statement === 'recurring')?.value).toBe(before + 1);
      expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0 }); // the next run is not failed by it again
    } finally {
      await db.dataSource.query(`DROP TRIGGER refuse_poison ON jobs; DROP FUNCTION refuse_poison()`);
    }
  });

  it('next hour: materialises only the one new occurrence', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z') });
    await sweep().runOnce(NOW);
    const res = await sweep().runOnce(new Date(NOW.getTime() + HOUR));
    expect(res).toMatchObject({ schedules: 1, inserted: 1 });
    expect((await occurrences(id)).at(-1)?.run_at).toEqual(new Date('2026-11-30T11:00:00Z'));
  });

  it('an occurrence a little late (within the tolerance) is on time, not missed', async () => {
    const id = await schedule({ cron: '* * * * *', nextRunAt: new Date('2026-11-29T10:19:00Z') });
    const res = await sweep().runOnce(new Date('2026-11-29T10:19:40Z'));
    expect(res.occurrences).toMatchObject({ missed: 0, skipped: 0 });
    expect((await occurrences(id))[0].run_at).toEqual(new Date('2026-11-29T10:19:00Z'));
  });

  describe('missed occurrences after downtime (hourly, down since 05:00, now 10:20)', () => {
    // Missed: 05:00 … 10:00 (10:00 is 20 min late, beyond the 5 min tolerance) = 6.
    const down = new Date('2026-11-29T05:00:00Z');

    it('skip: none of them run; continues from now', async () => {
      const id = await schedule({ nextRunAt: down, missed: 'skip' });
      const res = await sweep().runOnce(NOW);
      expect(res.occurrences).toEqual({ materialised: 24, missed: 0, skipped: 6 });
      expect(iso(await occurrences(id))[0]).toBe('2026-11-29T11:00:00.000Z');
    });

    it('latest: only the most recent one runs (due at once)', async () => {
      const id = await schedule({ nextRunAt: down, missed: 'latest' });
      const res = await sweep().runOnce(NOW);
      expect(res.occurrences).toEqual({ materialised: 24, missed: 1, skipped: 5 });
      expect(iso(await occurrences(id)).slice(0, 2)).toEqual(['2026-11-29T10:00:00.000Z', '2026-11-29T11:00:00.000Z']);
    });

    it('all: every one runs, up to the cap (the most recent ones; the overflow counts as skipped)', async () => {
      const a = await schedule({ nextRunAt: down, missed: 'all' });
      const res = await sweep().runOnce(NOW);
      expect(res.occurrences).toEqual({ materialised: 24, missed: 6, skipped: 0 });
      expect(await occurrences(a)).toHaveLength(30);
      await db.dataSource.query('TRUNCATE jobs, schedules');
      const b = await schedule({ nextRunAt: down, missed: 'all' });
      const capped = await sweep({ missedCap: 4 }).runOnce(NOW);
      expect(capped.occurrences).toEqual({ materialised: 24, missed: 4, skipped: 2 });
      expect(iso(await occurrences(b))[0]).toBe('2026-11-29T07:00:00.000Z');
    });

    it('counts almanac_schedule_occurrences_total by outcome', async () => {
      const value = async (outcome: string) =>
        (await metrics.occurrences.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
      const before = [await value('materialised'), await value('missed'), await value('skipped')];
      await schedule({ nextRunAt: down, missed: 'latest' });
      await sweep().runOnce(NOW);
      expect([await value('materialised'), await value('missed'), await value('skipped')]).toEqual([
        before[0] + 24,
        before[1] + 1,
        before[2] + 5,
      ]);
    });
  });

  describe('daylight saving (one rule: a missing local time is skipped, a repeated one runs once, at its first instant)', () => {
    it.each([
      // [zone, spring-forward day, UTC instants of 02:30 local around it]
      ['Europe/Berlin', '2026-03-28T00:00:00Z', ['2026-03-28T01:30:00.000Z', '2026-03-30T00:30:00.000Z']],
      ['America/New_York', '2026-03-07T00:00:00Z', ['2026-03-07T07:30:00.000Z', '2026-03-09T06:30:00.000Z']],
    ])('%s spring forward: 02:30 does not exist that night and is skipped', async (timezone, from, expected) => {
      const id = await schedule({ cron: '30 2 * * *', timezone, nextRunAt: new Date(from) });
      await sweep().runOnce(new Date(new Date(from).getTime() + 60e3));
      await sweep().runOnce(new Date(new Date(from).getTime() + 2 * DAY));
      expect(iso(await occurrences(id)).slice(0, 2)).toEqual(expected);
    });

    it.each([
      ['Europe/Berlin', '2026-10-24T12:00:00Z', ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']],
      ['America/New_York', '2026-10-31T12:00:00Z', ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']],
    ])('%s fall back: 01:30/02:30 happens twice locally but runs once (first instant)', async (timezone, from, expected) => {
      const cron = timezone === 'Europe/Berlin' ? '30 2 * * *' : '30 1 * * *';
      const id = await schedule({ cron, timezone, nextRunAt: new Date(from) });
      await sweep().runOnce(new Date(from));
      await sweep().runOnce(new Date(new Date(from).getTime() + DAY));
      expect(iso(await occurrences(id)).slice(0, 2)).toEqual(expected);
    });
  });

  it('paused schedules are left alone; resuming applies the missed policy to what passed meanwhile', async () => {
    const id = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z'), paused: true, missed: 'latest' });
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0 });
    await db.dataSource.query(`UPDATE schedules SET paused = false WHERE id = $1`, [id]);
    const later = new Date('2026-11-29T15:20:00Z');
    const res = await sweep().runOnce(later);
    expect(res.occurrences).toEqual({ materialised: 24, missed: 1, skipped: 4 });
    expect(iso(await occurrences(id))[0]).toBe('2026-11-29T15:00:00.000Z');
  });

  it('catches up a per-minute schedule resumed after 60 days in slices of bounded planning, one batch each', async () => {
    // 86,395 missed minutes: stepped through at once, ~0.4 s of the promoter's event loop for one schedule.
    const id = await schedule({ cron: '* * * * *', nextRunAt: new Date(NOW.getTime() - 60 * DAY), missed: 'latest' });
    const plans = jest.spyOn(SchedulePlanner.prototype, 'plan');
    try {
      const res = await sweep().runOnce(NOW);
      const steps = plans.mock.results.map((r) => (r.value as { steps: number }).steps);
      expect(steps.length).toBeGreaterThan(4); // each slice its own batch: the event loop turns between them
      expect(Math.max(...steps)).toBeLessThanOrEqual(DEFAULT_MAX_STEPS + 1); // + the latest one, stepped again next slice
      expect(res.occurrences).toMatchObject({ missed: 1, skipped: 60 * 24 * 60 - 6 }); // the last 5 minutes are within the tolerance
      expect(iso(await occurrences(id))[0]).toBe('2026-11-29T10:14:00.000Z'); // the latest missed one, then on time from 10:15
    } finally {
      plans.mockRestore();
    }
  });

  it('a cron change (API) removes unrun occurrences; the next run materialises the new timing only', async () => {
    const start = await dbTime(); // changed below, by the database's clock
    const id = await schedule({ nextRunAt: nextHour(start) });
    await sweep().runOnce(start);
    const schedules = new SchedulesRepository(db.dataSource);
    const daily = { cron: '30 9 * * *', timing: { schedule: parseSchedule('30 9 * * *', 'UTC') } };
    // Computed from a stale read (someone else changed the cron meanwhile): refused, nothing removed.
    const stale = { cron: '15 * * * *', timezone: 'UTC' };
    expect(await schedules.update(1, id, { cron: daily.cron, timing: { ...daily.timing, from: stale } })).toBe('changed');
    expect(await occurrences(id)).toHaveLength(24);
    const from = { cron: '0 * * * *', timezone: 'UTC' };
    await schedules.update(1, id, { cron: daily.cron, timing: { ...daily.timing, from } });
    expect(await occurrences(id)).toHaveLength(0);
    await sweep().runOnce(await dbTime());
    expect(iso(await occurrences(id))).toEqual([nextOccurrences(daily.timing.schedule, start, 1)[0].toISOString()]);
  });

  it('parks a schedule whose cron no longer parses instead of failing the batch', async () => {
    const bad = await schedule({ cron: 'every tuesday', nextRunAt: new Date('2026-11-29T11:00:00Z') });
    const good = await schedule({ nextRunAt: new Date('2026-11-29T11:00:00Z') });
    const res = await sweep().runOnce(NOW);
    expect(res).toMatchObject({ schedules: 2, invalid: 1, inserted: 24 });
    expect(await nextRunAt(bad)).toBeNull();
    expect(await occurrences(good)).toHaveLength(24);
  });

  it('works in batches across many schedules, and two replicas at once split them (SKIP LOCKED)', async () => {
    await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at)
       SELECT 1, 'bulk-' || g, 'noop', '0 * * * *', 'UTC', '2026-11-30T10:00:00Z' FROM generate_series(1, 2500) g`,
    );
    const [a, b] = await Promise.all([
      sweep({ batchSize: 200, concurrency: 2 }).runOnce(NOW),
      sweep({ batchSize: 200, concurrency: 2 }).runOnce(NOW),
    ]);
    expect(a.schedules + b.schedules).toBe(2500);
    expect(a.inserted + b.inserted).toBe(2500);
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs`);
    expect(n).toBe(2500);
  });

  it('caps one run and asks to be called again; calls onMaterialised when rows were inserted', async () => {
    await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at)
       SELECT 1, 'cap-' || g, 'noop', '0 * * * *', 'UTC', '2026-11-30T10:00:00Z' FROM generate_series(1, 30) g`,
    );
    const calls: Date[] = [];
    const hook = async (now: Date) => calls.push(now);
    expect(await sweep({ batchSize: 10, maxPerRun: 20, onMaterialised: hook }).runOnce(NOW)).toMatchObject({ schedules: 20, more: true });
    expect(await sweep({ batchSize: 10, maxPerRun: 20, onMaterialised: hook }).runOnce(NOW)).toMatchObject({ schedules: 10 });
    expect(await sweep({ batchSize: 10, maxPerRun: 20, onMaterialised: hook }).runOnce(NOW)).toMatchObject({ schedules: 0 });
    expect(calls).toHaveLength(2); // with the run's time as it went on: promotion's delays count from there
    for (const at of calls) expect(at.getTime() - NOW.getTime()).toBeGreaterThanOrEqual(0);
    for (const at of calls) expect(at.getTime() - NOW.getTime()).toBeLessThan(5000);
  });

  describe('bounded by rows and bytes, and fair between tenants', () => {
    /** Rows and payload bytes each transaction inserted (observed around the real repository). */
    function recordBatches(): { rows: number; bytes: number }[] {
      const seen: { rows: number; bytes: number }[] = [];
      const original = repo.materialiseDueSchedules.bind(repo);
      jest.spyOn(repo, 'materialiseDueSchedules').mockImplementation((until, limit, plan, exclude) =>
        original(until, limit, (schedules) => {
          const planned = plan(schedules);
          seen.push({ rows: planned.rows.length, bytes: planned.rows.reduce((n, r) => n + (r.payloadJson?.length ?? 0), 0) });
          return planned;
        }, exclude),
      );
      return seen;
    }
    afterEach(() => jest.restoreAllMocks());

    it('splits per-minute schedules with 2 KB payloads into transactions of bounded rows and bytes, and still materialises the whole horizon in one run', async () => {
      const payload = { blob: 'x'.repeat(2048) };
      const ids = await Promise.all(Array.from({ length: 5 }, () => schedule({ cron: '* * * * *', nextRunAt: NOW, payload })));
      const batches = recordBatches();
      const res = await sweep({ maxBatchRows: 1000, maxBatchBytes: 256 * 1024 }).runOnce(NOW);
      const perSchedule = await Promise.all(ids.map(async (id) => (await occurrences(id)).length));
      expect(perSchedule.every((n) => n === perSchedule[0] && n >= 1440)).toBe(true); // every minute of the 24 h horizon
      expect(res.inserted).toBe(5 * perSchedule[0]); // in this one run
      expect(batches.length).toBeGreaterThan(1);
      for (const b of batches) {
        expect(b.rows).toBeLessThanOrEqual(1000);
        expect(b.bytes).toBeLessThanOrEqual(256 * 1024);
      }
      for (const id of ids) expect((await nextRunAt(id))!.getTime()).toBeGreaterThan(NOW.getTime() + DAY - 60_000);
    });

    it("one tenant at its occurrences-per-run quota waits for the next run; another tenant's schedules materialise meanwhile", async () => {
      const noisy = await Promise.all(Array.from({ length: 4 }, () => schedule({ tenantId: 1, cron: '* * * * *', nextRunAt: NOW })));
      const quiet = await schedule({ tenantId: 2, cron: '0 * * * *', nextRunAt: new Date(NOW.getTime() + HOUR) });
      const near = 10 * 60e3;
      const first = await sweep({ batchSize: 2, maxPerTenantPerRun: 100, nearMs: near }).runOnce(NOW);
      expect(first.tenantsAtQuota).toBe(1);
      expect(await occurrences(quiet)).toHaveLength(23); // 12:00 today … 10:00 tomorrow
      const counts = async () => Promise.all(noisy.map(async (id) => (await occurrences(id)).length));
      const nearRows = (await counts()).reduce((a, b) => a + b, 0);
      expect(nearRows).toBeLessThanOrEqual(4 * 12 + 100); // the near ten minutes for each, then the quota
      // Every noisy schedule got its next minutes, so none waits with an occurrence about to turn late.
      for (const id of noisy) expect((await nextRunAt(id))!.getTime()).toBeGreaterThan(NOW.getTime() + near);
      await sweep({ batchSize: 2, maxPerTenantPerRun: 100, nearMs: near }).runOnce(new Date(NOW.getTime() + 60_000));
      expect((await counts()).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(nearRows + 100); // goes on where the quota stopped it
      // Nothing was dropped as missed along the way.
      const res = await sweep({ batchSize: 2, maxPerTenantPerRun: 100, nearMs: near }).runOnce(new Date(NOW.getTime() + 8 * 60_000));
      expect(res.occurrences.skipped).toBe(0);
    });
  });
});
