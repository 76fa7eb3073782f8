/**
 * Retention in steady state (issue 17 item 2): `--days` simulated days of `--per-day` jobs with
 * `--retention-days` retention. The bench drives the sweeps' clock; nothing waits for real time.
 *
 *   node -r ./bench/lib/register.cjs bench/retention.ts [--days 60] [--per-day 1000000] [--retention-days 30] [--tenants 2]
 *        [--key-reservation-days 400|forever] [--keys dated|uuid] [--schedules 0]
 *        [--postgres-settings shared_buffers=6GB,max_wal_size=16GB,...]
 *
 * `--postgres-settings` runs on a Postgres cluster of the bench's own, started with those settings
 * (`-c name=value`, overriding bench/lib/private-postgres.ts' fsync=off and synchronous_commit=off),
 * instead of the shared server.
 *
 * On a fresh database (`ALMANAC_BENCH_PG_URL`), each simulated day d (now = origin + d days):
 * - ingest: `--per-day` new jobs due tomorrow, through JobsRepository.insertBatch (the API's
 *   statement, with its retired-keys probe), batches of 1,000 on two lanes, tenants in turn; keys
 *   carry the day (`--keys dated`, an invoice a day) or are random UUIDs (`--keys uuid`);
 * - occurrences: with `--schedules N`, N per-minute schedules of the first tenant, materialised
 *   by the promoter's RecurringSweep.runOnce at each hour of the day (its one-hour horizon);
 * - promote: the promoter's PromotionSweep.runOnce(now), the production code, with a queue that
 *   only counts (Redis is not what is measured): yesterday's jobs become queued;
 * - execute: the queued jobs due before tomorrow finish as a worker would leave them (state,
 *   attempts, finished_at, result, and one job_attempts row each; 2 % dead, 1 % cancelled), in
 *   set-based statements, since the executions themselves are not what is measured here;
 * - retain: the promoter's RetentionSweep.runOnce(end of day) until it has nothing left, its
 *   database time (cutoff, removal day, reservations, freeing) the end of the day too
 *   (TimedRetention.databaseNow), each statement timed (how long its row locks are held);
 * - vacuum: one plain VACUUM (ANALYZE) of jobs, job_attempts and retired_keys. It stands in
 *   for the autovacuum and autoanalyze runs a real day would see (a simulated day lasts under a
 *   minute, less than autovacuum's nap); it takes no lock that blocks reads or writes.
 * Then the database's size. Prints one JSON document (stdout) and a table (stderr), and writes
 * bench/charts/retention.svg, or retention-schedules.svg with schedules (database size and the day's rates over the simulated days).
 */
import { utcDay } from '@almanac/domain';
import { JobsRepository, type NewJob, RecurringRepository, RetentionRepository, SweepsRepository, TenantsRepository } from '@almanac/persistence';
import type { DataSource } from 'typeorm';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RetentionSweep } from '../apps/promoter/src/retention/retention.sweep';
import { PromotionSweep } from '../apps/promoter/src/sweeps/promotion.sweep';
import { RecurringSweep } from '../apps/promoter/src/recurring/recurring.sweep';
import { SchedulePlanner } from '../apps/promoter/src/recurring/schedule-planner';
import { createBenchDatabase } from './lib/bench-db';
import { startPostgres } from './lib/private-postgres';
import { lineChartSvg } from './lib/line-chart';
import { retentionChart, retentionChartFile } from './lib/retention-chart';
import { arg, ROOT } from './lib/local';
import { round, spread } from './lib/stats';

const opts = {
  days: Number(arg('days', '60')),
  perDay: Number(arg('per-day', '1000000')),
  retentionDays: Number(arg('retention-days', '30')),
  tenants: Number(arg('tenants', '2')),
  /** How long removed jobs' keys stay reserved (the installation default the sweep is given). */
  keyReservationDays: arg('key-reservation-days', '400'),
  /**
   * `dated`: keys carry their day (later batches sort past every retired key); `uuid`: random;
   * `both`: the first tenant's dated, the others' UUIDs, each timed on its own.
   */
  keys: arg('keys', 'both') as 'dated' | 'uuid' | 'both',
  /** Per-minute schedules of the first tenant, materialised alongside (1,440 rows a day each). */
  schedules: Number(arg('schedules', '0')),
  /** `name=value,…`: a private cluster with these settings instead of the shared server. */
  postgresSettings: arg('postgres-settings', ''),
};
if (!['dated', 'uuid', 'both'].includes(opts.keys)) throw new Error('--keys must be dated, uuid or both');
/** A tenant's key style: with `both`, the first tenant's keys are dated and the rest UUIDs. */
const styleOf = (tenantIndex: number): 'dated' | 'uuid' => (opts.keys === 'both' ? (tenantIndex === 0 ? 'dated' : 'uuid') : opts.keys);
const DAY = 86_400e3;
const HOUR = 3600e3;
const ORIGIN = Date.parse('2027-01-01T00:00:00Z');
const BATCH = 1000;
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} retention: ${m}\n`);
const seconds = (t0: number) => (performance.now() - t0) / 1000;

interface Day {
  day: number;
  ingestPerSec: number;
  /** Ingest rates of the tenants with dated keys and with UUID keys (NaN: none of that style). */
  ingestDatedPerSec: number;
  ingestUuidPerSec: number;
  promotePerSec: number;
  executeSeconds: number;
  removed: number;
  retainSeconds: number;
  retainMaxStatementMs: number;
  vacuumSeconds: number;
  dbBytes: number;
  jobsBytes: number;
  attemptsBytes: number;
  retiredBytes: number;
  jobs: number;
  retiredKeys: number;
  /** Occurrence rows of the schedules kept (future and finished). */
  scheduleRows: number;
}

/**
 * RetentionRepository with each statement timed (how long a batch holds its row locks), on the
 * simulated clock: the sweep takes the database's time for its cutoff, removal day, reservations
 * and freeing, and here that is the simulated day's, so they follow the simulated days.
 */
class TimedRetention extends RetentionRepository {
  statementMs: number[] = [];
  /** Reserved keys freed since the bench last reset it. */
  keysFreed = 0;
  /** The simulated time the sweep's runs go by (the end of the day being simulated). */
  simulatedNow = new Date(ORIGIN);
  override async databaseNow(): Promise<Date> {
    return this.simulatedNow;
  }
  override async removeExpiredKeys(...args: Parameters<RetentionRepository['removeExpiredKeys']>) {
    const n = await super.removeExpiredKeys(...args);
    this.keysFreed += n;
    return n;
  }
  override async removeExpired(...args: Parameters<RetentionRepository['removeExpired']>) {
    const t = performance.now();
    try {
      return await super.removeExpired(...args);
    } finally {
      this.statementMs.push(performance.now() - t);
    }
  }
}

/** The day's jobs, tenant after tenant (each its share, two lanes); jobs/s over all and per key style. */
async function ingest(jobs: JobsRepository, tenants: number[], day: number, now: number) {
  const share = Math.ceil(opts.perDay / tenants.length);
  const spent = { dated: { jobs: 0, s: 0 }, uuid: { jobs: 0, s: 0 } };
  for (const [t, tenantId] of tenants.entries()) {
    const first = t * share;
    const count = Math.min(share, opts.perDay - first);
    const batches = Math.ceil(count / BATCH);
    let next = 0;
    const lane = async () => {
      for (let b = next++; b < batches; b = next++) {
        const items: NewJob[] = Array.from({ length: Math.min(BATCH, count - b * BATCH) }, (_, k) => {
          const i = first + b * BATCH + k;
          // A key a producer would send (an invoice a day, or a UUID), run times spread over tomorrow.
          return {
            kind: 'charge',
            key: styleOf(t) === 'uuid' ? randomUUID() : `inv:${day}:${((i * 2654435761) >>> 0).toString(36)}:${i}`,
            runAt: new Date(now + DAY + Math.floor((i / opts.perDay) * DAY)),
            payload: { invoice: i, amountCents: 1250, currency: 'EUR' },
            state: 'scheduled',
          };
        });
        const out = await jobs.insertBatch(tenantId, items);
        if (out.some((o) => o.status !== 'created')) throw new Error(`day ${day}: tenant ${tenantId}'s batch ${b} did not create every job`);
      }
    };
    const t0 = performance.now();
    await Promise.all([lane(), lane()]);
    spent[styleOf(t)].jobs += count;
    spent[styleOf(t)].s += seconds(t0);
  }
  const rate = (x: { jobs: number; s: number }) => (x.jobs ? x.jobs / x.s : NaN);
  return { all: opts.perDay / (spent.dated.s + spent.uuid.s), dated: rate(spent.dated), uuid: rate(spent.uuid) };
}

/** The queued jobs due before `until` finish as workers would leave them, 100,000 at a time. */
async function execute(ds: DataSource, from: number, until: number): Promise<void> {
  const step = DAY / 24;
  for (let t = from; t < until; t += step) {
    await ds.query(
      `WITH done AS (
         UPDATE jobs SET state = CASE WHEN id % 100 = 1 THEN 'c' WHEN id % 50 = 0 THEN 'x' ELSE 'd' END::"char",
                         attempts = CASE WHEN id % 100 = 1 THEN 0 ELSE 1 END,
                         finished_at = run_at + interval '2 seconds',
                         result = CASE WHEN id % 100 = 1 OR id % 50 = 0 THEN NULL ELSE '{"charged":1250}'::jsonb END,
                         last_error = CASE WHEN id % 50 = 0 THEN 'card declined' END
          WHERE state = 'q' AND run_at >= $1 AND run_at < $2
          RETURNING id, tenant_id, run_at, finished_at, state)
       INSERT INTO job_attempts (job_id, started_at, finished_at, tenant_id, attempt, outcome, worker_id, error, result)
       SELECT id, run_at + interval '1 second', finished_at, tenant_id, 1, CASE WHEN state = 'x' THEN 'failed' ELSE 'succeeded' END, 'worker-7f9c',
              CASE WHEN state = 'x' THEN 'card declined' END, CASE WHEN state = 'd' THEN '{"charged":1250}'::jsonb END
         FROM done WHERE state <> 'c'`,
      [new Date(t), new Date(Math.min(t + step, until))],
    );
  }
}

/** The schedules' occurrence rows kept, counted through jobs_tenant_key (index only). */
async function scheduleRows(ds: DataSource, tenantId: number): Promise<number> {
  if (opts.schedules === 0) return 0;
  const [{ n }] = await ds.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND key >= 'schedule:' AND key < 'schedule;'`, [tenantId]);
  return n;
}

async function sizes(ds: DataSource) {
  const [r] = await ds.query<Record<string, string>[]>(
    `SELECT pg_database_size(current_database()) AS db, pg_total_relation_size('jobs') AS jobs,
            pg_total_relation_size('job_attempts') AS attempts,
            pg_total_relation_size('retired_keys') AS retired,
            (SELECT reltuples FROM pg_class WHERE relname = 'jobs') AS job_rows, (SELECT reltuples FROM pg_class WHERE relname = 'retired_keys') AS retired_rows`,
  );
  return {
    dbBytes: Number(r.db), jobsBytes: Number(r.jobs), attemptsBytes: Number(r.attempts), retiredBytes: Number(r.retired),
    jobs: Math.max(0, Number(r.job_rows)), retiredKeys: Math.max(0, Number(r.retired_rows)),
  };
}

async function main() {
  log(`${opts.days} days × ${opts.perDay.toLocaleString('en')} jobs, ${opts.retentionDays}-day retention, ${opts.tenants} tenants`);
  const settings = Object.fromEntries(opts.postgresSettings.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
  const cluster = opts.postgresSettings ? await startPostgres(settings) : undefined;
  if (cluster) process.env.ALMANAC_BENCH_PG_URL = cluster.url;
  const db = await createBenchDatabase('almanac_bench_retention', 6);
  const started = performance.now();
  try {
    const ds = db.dataSource;
    const tenantsRepo = new TenantsRepository(ds);
    const tenants: number[] = [];
    for (let i = 0; i < opts.tenants; i++) tenants.push((await tenantsRepo.create(`tenant-${i}`)).tenant.id);
    const jobs = new JobsRepository(ds);
    let promoted = 0;
    const promotion = new PromotionSweep(new SweepsRepository(ds), { enqueue: async (items) => void (promoted += items.length) }, {
      hotHorizonMs: DAY, batchSize: 5000, maxPerRun: 100_000_000, concurrency: 2,
    });
    const recurring = new RecurringSweep(new RecurringRepository(ds), new SchedulePlanner({ missedCap: 1000, lateToleranceMs: 5 * 60_000 }), {
      horizonMs: HOUR, batchSize: 1000, maxPerRun: 10_000_000, concurrency: 2, maxBatchRows: 20_000, maxBatchBytes: 16 * 2 ** 20,
      maxPerTenantPerRun: 10_000_000, nearMs: 6 * 60_000,
    });
    if (opts.schedules > 0) {
      await ds.query(
        `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, next_run_at)
         SELECT $1, 'minutely-' || g, 'noop', '* * * * *', 'UTC', '{"report":"minutely"}', $2 FROM generate_series(1, $3) g`,
        [tenants[0], new Date(ORIGIN), opts.schedules],
      );
    }
    const retentionRepo = new TimedRetention(ds);
    const retention = new RetentionSweep(retentionRepo, {
      defaultSeconds: opts.retentionDays * 86_400,
      defaultKeyReservation: opts.keyReservationDays === 'forever' ? 'forever' : Number(opts.keyReservationDays) * 86_400,
      batchSize: 5000,
      maxPerRun: 200_000,
    });
    const days: Day[] = [];
    for (let d = 0; d < opts.days; d++) {
      const now = ORIGIN + d * DAY;
      const ingested = await ingest(jobs, tenants, d, now);
      let t = performance.now();
      for (let h = 0; h < 24 && opts.schedules > 0; h++) {
        for (let more = true; more; ) more = (await recurring.runOnce(new Date(now + h * HOUR))).more === true;
      }
      const materialiseSeconds = seconds(t);
      promoted = 0;
      t = performance.now();
      await promotion.runOnce(new Date(now));
      const promotePerSec = d === 0 ? NaN : promoted / seconds(t);
      t = performance.now();
      await execute(ds, now, now + DAY);
      const executeSeconds = seconds(t);
      retentionRepo.statementMs = [];
      retentionRepo.keysFreed = 0;
      retentionRepo.simulatedNow = new Date(now + DAY);
      let removed = 0;
      t = performance.now();
      for (let more = true; more; ) {
        const r = await retention.runOnce(retentionRepo.simulatedNow);
        removed += r.removed;
        more = r.more === true;
      }
      const retainSeconds = seconds(t);
      t = performance.now();
      // With ANALYZE, as autovacuum's would: a table grown to millions of rows in minutes has no
      // statistics otherwise, and a join to job_attempts without them was planned as a scan of it.
      await ds.query('VACUUM (ANALYZE) jobs');
      await ds.query('VACUUM (ANALYZE) job_attempts');
      await ds.query('VACUUM (ANALYZE) retired_keys');
      const vacuumSeconds = seconds(t);
      const day: Day = {
        day: d + 1, ingestPerSec: round(ingested.all), ingestDatedPerSec: round(ingested.dated), ingestUuidPerSec: round(ingested.uuid), promotePerSec: round(promotePerSec), executeSeconds: round(executeSeconds, 1),
        removed, retainSeconds: round(retainSeconds, 1), retainMaxStatementMs: round(Math.max(0, ...retentionRepo.statementMs)),
        vacuumSeconds: round(vacuumSeconds, 1), ...(await sizes(ds)), scheduleRows: await scheduleRows(ds, tenants[0]),
      };
      days.push(day);
      log(
        `day ${day.day} (${utcDay(new Date(now))}): ingest ${day.ingestPerSec}/s, promote ${day.promotePerSec}/s, removed ${removed.toLocaleString('en')} in ${day.retainSeconds} s, ${retentionRepo.keysFreed.toLocaleString('en')} reserved keys freed ` +
          `(longest statement ${day.retainMaxStatementMs} ms), vacuum ${day.vacuumSeconds} s; database ${round(day.dbBytes / 2 ** 30, 2)} GiB, ${Math.round(day.jobs).toLocaleString('en')} jobs` +
          (opts.schedules ? `, ${day.scheduleRows.toLocaleString('en')} occurrence rows (materialised in ${round(materialiseSeconds, 1)} s)` : ''),
      );
    }
    report(days, seconds(started));
  } finally {
    await db.drop();
    cluster?.stop();
  }
}

function report(days: Day[], wallSeconds: number) {
  // Removal starts on day retention + 2 (a job due on day 2 finishes then); the "after day 31".
  const steady = days.filter((d) => d.day > opts.retentionDays + 1);
  const early = days.filter((d) => d.day >= 2 && d.day <= 4); // day 1 has nothing to promote
  const med = (xs: number[]) => spread(xs).median;
  const steadySizes = steady.map((d) => d.dbBytes);
  const steadyMedian = med(steadySizes);
  const last = days[days.length - 1];
  const summary = {
    steadyDays: steady.length,
    /** Largest distance of a steady-state day's size from their median, in % (target ±10 %). */
    sizeDeviationPct: steady.length ? round((Math.max(...steadySizes.map((b) => Math.abs(b - steadyMedian))) / steadyMedian) * 100, 1) : NaN,
    /** Size on the last day against the first steady day. */
    sizeGrowthPct: steady.length ? round(((last.dbBytes - steady[0].dbBytes) / steady[0].dbBytes) * 100, 1) : NaN,
    steadyDbGiB: round(steadyMedian / 2 ** 30, 2),
    ingestEarly: round(med(days.slice(0, 3).map((d) => d.ingestPerSec))),
    ingestSteady: round(med(steady.map((d) => d.ingestPerSec))),
    ingestDatedEarly: round(med(days.slice(0, 3).map((d) => d.ingestDatedPerSec))),
    ingestDatedSteady: round(med(steady.map((d) => d.ingestDatedPerSec))),
    ingestUuidEarly: round(med(days.slice(0, 3).map((d) => d.ingestUuidPerSec))),
    ingestUuidSteady: round(med(steady.map((d) => d.ingestUuidPerSec))),
    /** Removal time on the last day against the first steady day (issue 33: within 1.2×). */
    retainLastVsFirst: steady.length ? round(last.retainSeconds / Math.max(0.1, steady[0].retainSeconds), 2) : NaN,
    promoteEarly: round(med(early.map((d) => d.promotePerSec))),
    promoteSteady: round(med(steady.map((d) => d.promotePerSec))),
    removedPerDaySteady: round(med(steady.map((d) => d.removed))),
    retainSecondsSteady: round(med(steady.map((d) => d.retainSeconds)), 1),
    retainMaxStatementMs: Math.max(...days.map((d) => d.retainMaxStatementMs)),
    vacuumSecondsSteady: round(med(steady.map((d) => d.vacuumSeconds)), 1),
    retiredBytesPerKey: last.retiredKeys > 0 ? round(last.retiredBytes / last.retiredKeys, 1) : NaN,
    /** The schedules' occurrence rows after day retention + 1: median and largest deviation from it, in %. */
    scheduleRowsSteady: round(med(steady.map((d) => d.scheduleRows))),
    scheduleRowsDeviationPct: opts.schedules && steady.length
      ? round((Math.max(...steady.map((d) => Math.abs(d.scheduleRows - med(steady.map((x) => x.scheduleRows))))) / med(steady.map((d) => d.scheduleRows))) * 100, 1)
      : NaN,
    wallSeconds: round(wallSeconds),
  };
  const pct = (a: number, b: number) => `${round((a / b) * 100)} %`;
  process.stderr.write(
    `\n| ${opts.days} days × ${opts.perDay.toLocaleString('en')} jobs, ${opts.retentionDays}-day retention | |\n|---|---|\n` +
      `| database size after day ${opts.retentionDays + 1}: median, largest deviation, last day vs first | ${summary.steadyDbGiB} GiB, ±${summary.sizeDeviationPct} %, ${summary.sizeGrowthPct} % |\n` +
      `| ingest jobs/s: days 1-3 → after day ${opts.retentionDays + 1} | ${summary.ingestEarly} → ${summary.ingestSteady} (${pct(summary.ingestSteady, summary.ingestEarly)}) |\n` +
      `| promotion rows/s: days 2-4 → after day ${opts.retentionDays + 1} | ${summary.promoteEarly} → ${summary.promoteSteady} (${pct(summary.promoteSteady, summary.promoteEarly)}) |\n` +
      `| retention: rows a day, seconds a day, longest statement | ${summary.removedPerDaySteady.toLocaleString('en')}, ${summary.retainSecondsSteady} s, ${summary.retainMaxStatementMs} ms |\n` +
      `| ingest, dated keys / UUID keys: after day ${opts.retentionDays + 1} against days 1-3 | ${pct(summary.ingestDatedSteady, summary.ingestDatedEarly)} / ${pct(summary.ingestUuidSteady, summary.ingestUuidEarly)} |\n` +
      `| removal time, last day against day ${opts.retentionDays + 2} | ${summary.retainLastVsFirst} × |\n` +
      (opts.schedules ? `| occurrence rows of ${opts.schedules} per-minute schedules after day ${opts.retentionDays + 1}: median, largest deviation | ${summary.scheduleRowsSteady.toLocaleString('en')}, ±${summary.scheduleRowsDeviationPct} % |\n` : '') +
      `| retired_keys bytes per key (table and index) | ${summary.retiredBytesPerKey} B |\n`,
  );
  const svg = lineChartSvg(retentionChart(opts, days));
  writeFileSync(join(ROOT, 'bench', 'charts', retentionChartFile(opts.schedules)), svg);
  process.stdout.write(`${JSON.stringify({ bench: 'retention', at: new Date().toISOString(), inputs: opts, summary, days })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
