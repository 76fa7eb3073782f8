import { occurrenceKey } from '@almanac/domain';
import { ScheduleRunsRepository, ScheduleWatchRepository, SweepsRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { SweepMetrics } from '../sweeps/sweep-metrics';
import { ScheduleWatchSweep } from './schedule-watch.sweep';

const NOW = new Date('2026-12-01T05:30:00Z');

describe('ScheduleWatchSweep (Postgres)', () => {
  let db: TestDatabase;
  let metrics: SweepMetrics;
  const sweep = (maxRunsPerSchedule = 100) =>
    new ScheduleWatchSweep(new ScheduleWatchRepository(db.dataSource), new ScheduleRunsRepository(db.dataSource), new SweepsRepository(db.dataSource),
      { batchSize: 100, maxRunsPerSchedule, tenantsTop: 10 }, metrics);

  beforeAll(async () => {
    db = await createTestDatabase();
    metrics = new SweepMetrics(new MetricsService());
  });
  afterAll(() => db.drop());

  async function schedule(tenantId: number, expect: number | null): Promise<string> {
    const [{ id }] = await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at, expect_within_seconds, created_at)
       VALUES ($1, $2, 'noop', '0 * * * *', 'UTC', $3, $4, '2026-12-01T00:30:00Z') RETURNING id::text AS id`,
      [tenantId, `hourly-${Math.random().toString(36).slice(2)}`, NOW, expect],
    );
    return id as string;
  }

  /** The run due at `hour`:00 (UTC, 1 December), its first attempt `lateMs` after. */
  async function run(scheduleId: string, tenantId: number, hour: number, state: string, lateMs: number | null): Promise<void> {
    const at = `2026-12-01T0${hour}:00:00Z`;
    const [{ id }] = await db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts) VALUES ($1, $2, 'noop', $3, $4, $5) RETURNING id::text AS id`,
      [tenantId, `schedule:${scheduleId}:${at}`, at, state, lateMs === null ? 0 : 1],
    );
    if (lateMs !== null) {
      await db.dataSource.query(`INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at) VALUES ($1, $2, 1, $3::timestamptz + $4 * interval '1 millisecond')`, [id, tenantId, at, lateMs]);
    }
  }

  it('classifies each run once its expectation passed (ok, late, missed, failed), keeps the latest, and counts each once', async () => {
    const s = await schedule(1, 300);
    const quiet = await schedule(2, null); // no expectation: not watched
    await run(s, 1, 1, 'd', 10_000); // 01:00 ok
    await run(s, 1, 2, 'd', 400_000); // 02:00 started 6 min 40 s late
    await run(s, 1, 3, 'x', 1_000); // 03:00 failed
    // 04:00: no job at all (missed); 05:00 is due but its 300 s have not passed by 05:30? they have: a queued job never started
    await run(s, 1, 5, 'q', null);
    await run(quiet, 2, 1, 'q', null);
    const first = await sweep().runOnce(NOW);
    expect(first).toMatchObject({ schedules: 1, outcomes: { ok: 1, late: 1, failed: 1, missed: 2 } });
    const [row] = await db.dataSource.query(`SELECT last_outcome, last_outcome_at, watched_through FROM schedules WHERE id = $1`, [s]);
    expect(row).toEqual({ last_outcome: 'missed', last_outcome_at: new Date('2026-12-01T05:00:00Z'), watched_through: new Date('2026-12-01T05:25:00Z') });
    expect((await metrics.scheduleRuns.get()).values).toEqual(expect.arrayContaining([expect.objectContaining({ labels: { outcome: 'missed' }, value: 2 })]));
    expect((await metrics.schedulesBehind.get()).values).toEqual(expect.arrayContaining([expect.objectContaining({ labels: { tenant: '1' }, value: 1 })]));
    // Again at the same time: nothing new to look at, nothing counted twice.
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 0, outcomes: { ok: 0, late: 0, failed: 0, missed: 0 } });
  });

  it('judges a run whose row retention removed by how it ended, not as missed', async () => {
    const s = await schedule(7, 300);
    const retire = (hour: number, state: string) =>
      db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) VALUES (7, $1, '2026-12-01', $2)`, [`schedule:${s}:2026-12-01T0${hour}:00:00Z`, state]);
    await retire(1, 'd'); // succeeded, removed within the hour (a tenant's retention shorter than the watch's look)
    await retire(2, 'x'); // ended dead
    await run(s, 7, 3, 'd', 1_000);
    // Before, the two removed runs counted missed: an AlmanacScheduleMissed for runs that ran.
    expect(await sweep().runOnce(NOW)).toMatchObject({ schedules: 1, outcomes: { ok: 2, late: 0, failed: 1, missed: 2 } }); // 04:00 and 05:00 never ran
  });

  it('never moves a schedule\'s watch back over a cron change made while its batch was looked at', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const s = await schedule(4, 300);
    const watch = new ScheduleWatchRepository(db.dataSource);
    const [looked] = await watch.due(NOW, 10); // the sweep's read
    expect(looked.id).toBe(s);
    await db.dataSource.query(`UPDATE schedules SET cron = '30 * * * *', version = version + 1, watched_through = $2 WHERE id = $1`, [s, NOW]); // the API's PATCH
    await watch.record([{ id: s, since: looked.since, through: new Date('2026-12-01T05:25:00Z'), last: { outcome: 'missed', dueAt: new Date('2026-12-01T05:00:00Z') } }]);
    const [row] = await db.dataSource.query(`SELECT watched_through, last_outcome FROM schedules WHERE id = $1`, [s]);
    expect(row).toEqual({ watched_through: NOW, last_outcome: null });
    expect(await sweep().runOnce(NOW)).toMatchObject({ outcomes: { missed: 0 } });
  });

  it('judges a run whose first attempt is still running once it ends, never as missed', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const s = await schedule(5, 1500); // 25 min: at 05:30 the 05:00 run is within its hold
    for (const hour of [1, 2, 3, 4]) await run(s, 5, hour, 'd', 10_000);
    // 05:00 claimed at 05:26:40 and still running: attempts 1, no job_attempts row yet.
    await run(s, 5, 5, 'r', null);
    await db.dataSource.query(`UPDATE jobs SET attempts = 1, claimed_by = 1, lease_until = $2 WHERE key = $1`, [`schedule:${s}:2026-12-01T05:00:00Z`, NOW]);
    expect(await sweep().runOnce(NOW)).toMatchObject({ outcomes: { ok: 4, late: 0, missed: 0, failed: 0 }, more: false });
    const [held] = await db.dataSource.query(`SELECT watched_through, last_outcome FROM schedules WHERE id = $1`, [s]);
    expect(held).toEqual({ watched_through: new Date('2026-12-01T04:59:59.999Z'), last_outcome: 'ok' });
    expect(await sweep().runOnce(NOW)).toMatchObject({ outcomes: { ok: 0, late: 0, missed: 0, failed: 0 } }); // still running
    // The attempt ends: its start is recorded, 26 min 40 s after it was due.
    const [[{ id }]] = await db.dataSource.query(`UPDATE jobs SET state = 'd' WHERE key = $1 RETURNING id`, [`schedule:${s}:2026-12-01T05:00:00Z`]);
    await db.dataSource.query(`INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at) VALUES ($1, 5, 1, '2026-12-01T05:26:40Z')`, [id]);
    expect(await sweep().runOnce(NOW)).toMatchObject({ outcomes: { ok: 0, late: 1, missed: 0, failed: 0 } });
    const [judged] = await db.dataSource.query(`SELECT watched_through, last_outcome, last_outcome_at FROM schedules WHERE id = $1`, [s]);
    expect(judged).toEqual({ watched_through: new Date('2026-12-01T05:05:00Z'), last_outcome: 'late', last_outcome_at: new Date('2026-12-01T05:00:00Z') });
  });

  it('judges a run whose first attempt failed and waits for a retry once it ends: dead is failed', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const s = await schedule(9, 1500); // 25 min: at 05:30 the 05:00 run is within its hold
    for (const hour of [1, 2, 3, 4]) await run(s, 9, hour, 'd', 10_000);
    await run(s, 9, 5, 's', 10_000); // 05:00 started on time, failed, scheduled again
    const watch = sweep();
    expect(await watch.runOnce(NOW)).toMatchObject({ outcomes: { ok: 4, late: 0, missed: 0, failed: 0 } });
    await db.dataSource.query(`UPDATE jobs SET state = 'x' WHERE key = $1`, [`schedule:${s}:2026-12-01T05:00:00Z`]); // its retry failed for good
    expect(await watch.runOnce(new Date(NOW.getTime() + 60_000))).toMatchObject({ outcomes: { ok: 0, late: 0, missed: 0, failed: 1 } });
    const [row] = await db.dataSource.query(`SELECT last_outcome, last_outcome_at FROM schedules WHERE id = $1`, [s]);
    expect(row).toEqual({ last_outcome: 'failed', last_outcome_at: new Date('2026-12-01T05:00:00Z') });
  });

  it('holds a schedule behind a running run 10 minutes past its expectation at most: then it counts as started, and the missed runs after it are reported', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const s = await schedule(8, 60);
    await run(s, 8, 1, 'r', null); // hung since 01:00; 02:00 … 05:00 never started
    await db.dataSource.query(`UPDATE jobs SET attempts = 1, claimed_by = 1, lease_until = $2 WHERE key = $1`, [`schedule:${s}:2026-12-01T01:00:00Z`, NOW]);
    expect(await sweep().runOnce(NOW)).toMatchObject({ outcomes: { ok: 1, missed: 4 } });
  });

  it("leaves out for a while the schedules held by a running run: a batch of them no longer keeps every other schedule from being looked at", async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const held = [await schedule(6, 1500), await schedule(6, 1500)]; // 25 min: at 05:30 their 05:00 runs are within their hold
    for (const s of held) {
      for (const hour of [1, 2, 3, 4]) await run(s, 6, hour, 'd', 10_000);
      await run(s, 6, 5, 'r', null);
      await db.dataSource.query(`UPDATE jobs SET attempts = 1, claimed_by = 1, lease_until = $2 WHERE key = $1`, [`schedule:${s}:2026-12-01T05:00:00Z`, NOW]);
    }
    const other = await schedule(7, 300); // another tenant's, all of its runs missed
    await db.dataSource.query(`UPDATE schedules SET created_at = '2026-12-01T00:40:00Z' WHERE id = $1`, [other]); // behind the held ones in line
    const two = new ScheduleWatchSweep(new ScheduleWatchRepository(db.dataSource), new ScheduleRunsRepository(db.dataSource), new SweepsRepository(db.dataSource),
      { batchSize: 2, maxRunsPerSchedule: 100, tenantsTop: 10 }, metrics);
    expect(await two.runOnce(NOW)).toMatchObject({ schedules: 2, outcomes: { ok: 8, missed: 0 } }); // the two held, first in line
    expect(await two.runOnce(new Date(NOW.getTime() + 30_000))).toMatchObject({ schedules: 1, outcomes: { missed: 5 } }); // the other
    const [row] = await db.dataSource.query(`SELECT last_outcome FROM schedules WHERE id = $1`, [other]);
    expect(row.last_outcome).toBe('missed');
  });

  it('looks at a long backlog of runs a bounded number at a time', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const s = await schedule(3, 60);
    const a = await sweep(2).runOnce(NOW);
    expect(a).toMatchObject({ outcomes: { missed: 2 }, more: true });
    const [{ watched_through }] = await db.dataSource.query(`SELECT watched_through FROM schedules WHERE id = $1`, [s]);
    expect(watched_through).toEqual(new Date('2026-12-01T02:00:00Z'));
    const b = await sweep(10).runOnce(NOW);
    expect(b.outcomes.missed).toBe(3); // 03:00, 04:00, 05:00
  });

  it('records and counts nothing when its lease was lost while it looked: another replica judges those runs', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts');
    const s = await schedule(6, 300);
    await run(s, 6, 1, 'd', 10_000);
    const before = (await metrics.scheduleRuns.get()).values.find((v) => v.labels.outcome === 'ok')?.value ?? 0;
    /** The real lease, 300 ms long (renewed every 100 ms); the runs' read hands it to another replica and waits for the loss. */
    class ShortLease extends SweepsRepository {
      override withSweepLease<T>(name: 'overdue' | 'schedule_watch', fn: (lost: AbortSignal) => Promise<T>): Promise<T | null> {
        return super.withSweepLease(name, (lost) => ((signal = lost), fn(lost)), 300);
      }
    }
    let signal: AbortSignal | undefined;
    const runs = new (class extends ScheduleRunsRepository {
      override async rows(refs: readonly { tenantId: number; key: string }[]) {
        await db.dataSource.query(`UPDATE sweep_leases SET holder = 'another-replica', expires_at = now() + interval '1 minute' WHERE name = 'schedule_watch'`);
        await new Promise((r) => signal?.addEventListener('abort', r, { once: true }));
        return super.rows(refs);
      }
    })(db.dataSource);
    const lost = new ScheduleWatchSweep(new ScheduleWatchRepository(db.dataSource), runs, new ShortLease(db.dataSource), { batchSize: 100, maxRunsPerSchedule: 100, tenantsTop: 10 }, metrics);
    await lost.runOnce(NOW);
    const [row] = await db.dataSource.query(`SELECT last_outcome, watched_through FROM schedules WHERE id = $1`, [s]);
    expect(row).toEqual({ last_outcome: null, watched_through: null });
    expect((await metrics.scheduleRuns.get()).values.find((v) => v.labels.outcome === 'ok')?.value ?? 0).toBe(before);
  });

  it('counts nothing another replica recorded while it stalled past its lease before a renewal could tell it', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts, sweep_leases'); // the test before left its lease with another replica
    const s = await schedule(7, 300);
    await run(s, 7, 1, 'd', 10_000);
    const okCount = async () => (await metrics.scheduleRuns.get()).values.find((v) => v.labels.outcome === 'ok')?.value ?? 0;
    const before = await okCount();
    // The stall: between this replica's read of the runs and its record, its lease ran out (no
    // renewal has answered, so nothing told it) and another replica took it and judged the same runs.
    let other: Promise<unknown> | undefined;
    const stalled = new (class extends ScheduleRunsRepository {
      override async rows(refs: readonly { tenantId: number; key: string }[]) {
        const read = await super.rows(refs);
        await db.dataSource.query(`UPDATE sweep_leases SET expires_at = now() - interval '1 second' WHERE name = 'schedule_watch'`);
        await (other = sweep().runOnce(NOW));
        return read;
      }
    })(db.dataSource);
    const replica = new ScheduleWatchSweep(new ScheduleWatchRepository(db.dataSource), stalled, new SweepsRepository(db.dataSource), { batchSize: 100, maxRunsPerSchedule: 100, tenantsTop: 10 }, metrics);
    const mine = await replica.runOnce(NOW);
    await expect(other).resolves.toMatchObject({ outcomes: { ok: 1, missed: 4 } }); // 01:00 ok; 02:00-05:00 missed
    expect(mine.outcomes).toEqual({ ok: 0, late: 0, missed: 0, failed: 0 });
    expect((await okCount()) - before).toBe(1);
  });
  it('judges by the database\'s clock: a host running fast does not find a run about to start on time missed', async () => {
    await db.dataSource.query('TRUNCATE schedules, jobs, job_attempts, sweep_leases');
    const dbNow = async () => ((await db.dataSource.query(`SELECT now() AS t`))[0].t as Date).getTime();
    const at = await dbNow();
    const skew = at - Date.now();
    const due = new Date(Math.floor(at / 60_000) * 60_000); // this minute's run, by the database's clock
    // Its expectation passes 1-2 s from now by the database's clock, 8-9 s ago by a host 10 s fast.
    const expectSeconds = Math.floor((at - due.getTime()) / 1000) + 2;
    const [{ id: s }] = await db.dataSource.query(
      `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at, expect_within_seconds, created_at)
       VALUES (11, 'minutely', 'noop', '* * * * *', 'UTC', $1, $2, $3) RETURNING id::text AS id`,
      [due, expectSeconds, new Date(due.getTime() - 30_000)],
    );
    const key = occurrenceKey(s, due);
    const [{ id: job }] = await db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts) VALUES (11, $1, 'noop', $2, 'q', 0) RETURNING id::text AS id`, [key, due]);
    const fast = () => new Date(Date.now() + skew + 10_000); // the promoter's host: 10 s ahead of the database
    expect(await sweep().runOnce(fast())).toMatchObject({ outcomes: { ok: 0, late: 0, missed: 0, failed: 0 } });
    // It starts on time (by the database's clock), and is judged once its expectation has passed by that clock.
    await db.dataSource.query(`UPDATE jobs SET state = 'd', attempts = 1 WHERE id = $1`, [job]);
    await db.dataSource.query(`INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at) VALUES ($1, 11, 1, $2)`, [job, new Date(due.getTime() + 500)]);
    const expected = due.getTime() + expectSeconds * 1000;
    for (const bound = Date.now() + 5_000; (await dbNow()) <= expected && Date.now() < bound; ) await new Promise((r) => setTimeout(r, 50));
    expect(await sweep().runOnce(fast())).toMatchObject({ outcomes: { ok: 1, late: 0, missed: 0, failed: 0 } });
    const [row] = await db.dataSource.query(`SELECT last_outcome FROM schedules WHERE id = $1`, [s]);
    expect(row.last_outcome).toBe('ok');
  });
});
