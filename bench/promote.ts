// Promoter figures (issue 4): promotion per-row cost at 1 M and 10 M rows, the overdue sweep on a
// big table with nothing to do, and recurring materialisation for many hourly schedules.
//
//   node -r ./bench/lib/register.cjs bench/promote.ts            # 1 M rows, 1 M schedules
//   node -r ./bench/lib/register.cjs bench/promote.ts --full     # also 10 M rows (loads for minutes)
//   flags: --sizes=1000000,10000000 --promote=100000 --runs=3 --schedules=1000000 --concurrency=2 --reuse
//          --overdue-only (with --reuse: re-measure only the idle overdue sweep) --json-only
//          --fair=1000000 (also the fair-promotion scenario: a noisy tenant with that many rows in
//          the current hour, a quiet tenant with 6; --fair-only skips the rest)
//
// Each table size gets its own database (almanac_bench_promote_<n>), loaded with one
// INSERT … SELECT generate_series per million rows with the secondary indexes dropped and rebuilt
// afterwards (as a bulk restore would), then VACUUM ANALYZE. --reuse keeps and reuses them.
// Redis is a private redis-server on a free port (FLUSHALL between runs is safe there).
import { ReadyQueues } from '@almanac/delivery';
import { KindCatalog, KindRoutes } from '@almanac/kinds';
import { createDataSource, KindsRepository, RecurringRepository, runMigrations, SweepsRepository } from '@almanac/persistence';
import { HotQueue } from '@almanac/platform';
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { DataSource as DataSourceClass, type DataSource } from 'typeorm';
import { LostHints } from '../apps/promoter/src/overdue/lost-hints';
import { OverdueSweep } from '../apps/promoter/src/overdue/overdue.sweep';
import { RedisEpoch } from '../apps/promoter/src/overdue/redis-epoch';
import { RecurringSweep } from '../apps/promoter/src/recurring/recurring.sweep';
import { SchedulePlanner } from '../apps/promoter/src/recurring/schedule-planner';
import { PromotionSweep } from '../apps/promoter/src/sweeps/promotion.sweep';
import { startPrivateRedis, type PrivateRedis } from '../test/support/private-redis';

const PG_BASE = process.env.ALMANAC_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const HOUR = 3600e3;
const DAY = 24 * HOUR;
/** The bench's "now": the sweeps take time as an argument, so the data can be fixed. */
const NOW = new Date('2026-12-01T00:10:00Z');
/** 100 k rows due inside one UTC hour, 23 h ahead: inside the hot horizon. */
const TARGET_HOUR = new Date('2026-12-01T23:00:00Z');
/** Everything else is cold: spread over the year after the horizon's last bucket. */
const BACKGROUND_FROM = new Date('2026-12-03T00:00:00Z');

interface Args {
  sizes: number[];
  promote: number;
  runs: number;
  schedules: number;
  reuse: boolean;
  jsonOnly: boolean;
  concurrency: number;
  /** Skip the timed promotion runs (re-measure the overdue sweep on an already loaded table). */
  overdueOnly: boolean;
  /** Noisy tenant's rows in the fair-promotion scenario (0: not run). */
  fair: number;
  fairOnly: boolean;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const full = argv.includes('--full');
  const sizes = get('sizes')?.split(',').filter(Boolean).map(Number) ?? (full ? [1_000_000, 10_000_000] : [1_000_000]);
  return {
    sizes,
    promote: Number(get('promote') ?? 100_000),
    runs: Number(get('runs') ?? 3),
    schedules: Number(get('schedules') ?? 1_000_000),
    reuse: argv.includes('--reuse'),
    concurrency: Number(get('concurrency') ?? 2),
    overdueOnly: argv.includes('--overdue-only'),
    jsonOnly: argv.includes('--json-only'),
    fair: Number(get('fair') ?? 0),
    fairOnly: argv.includes('--fair-only'),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

let quiet = false;
const log = (msg: string) => {
  if (!quiet) process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);
};

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = process.hrtime.bigint();
  const out = await fn();
  return [out, Number(process.hrtime.bigint() - t0) / 1e6];
}

/**
 * CPU seconds used by a process (utime + stime from /proc/<pid>/stat, 100 ticks/s). The machine
 * these figures come from is shared (load average in the JSON): wall time then measures the
 * neighbours as much as the sweep, CPU time per row does not.
 */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

interface CpuSplit {
  node: number;
  redis: number;
  postgres: number;
}

/** Runs `fn`, returning its wall time and the CPU ms of this process, Redis and this database's backends. */
async function measured<T>(ds: DataSource, redisPid: number, fn: () => Promise<T>): Promise<[T, number, CpuSplit]> {
  // Warm the pool so every backend that will work exists before the first reading.
  await Promise.all(Array.from({ length: 4 }, () => ds.query('SELECT 1')));
  const pids = (await ds.query<{ pid: number }[]>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)).map((r) => r.pid);
  const pg0 = pids.reduce((a, p) => a + procCpuMs(p), 0);
  const r0 = procCpuMs(redisPid);
  const n0 = process.cpuUsage();
  const [out, wall] = await timed(fn);
  const n1 = process.cpuUsage(n0);
  const cpu = {
    node: (n1.user + n1.system) / 1000,
    redis: procCpuMs(redisPid) - r0,
    postgres: pids.reduce((a, p) => a + procCpuMs(p), 0) - pg0,
  };
  return [out, wall, cpu];
}

const cpuTotal = (c: CpuSplit) => c.node + c.redis + c.postgres;

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: `${PG_BASE}/postgres` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A migrated database; true when it already held the requested data (--reuse). */
async function openDatabase(name: string, reuse: boolean, marker: string): Promise<[DataSource, boolean]> {
  const exists = await admin(async (c) => (await c.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name])).rowCount === 1);
  if (exists && !reuse) await admin((c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`));
  if (!exists || !reuse) await admin((c) => c.query(`CREATE DATABASE ${name}`));
  // Pool connections never idle out, so the backends whose CPU time is read stay the same ones.
  const base = createDataSource({ url: `${PG_BASE}/${name}`, poolSize: 4 });
  const ds = new DataSourceClass({ ...base.options, extra: { max: 4, idleTimeoutMillis: 0 } });
  await ds.initialize();
  await runMigrations(ds);
  await ds.query(`CREATE TABLE IF NOT EXISTS bench_marker (what text PRIMARY KEY)`);
  const loaded = (await ds.query<{ what: string }[]>(`SELECT what FROM bench_marker WHERE what = $1`, [marker])).length === 1;
  return [ds, loaded];
}

/** Bulk load as a restore would: secondary indexes dropped, rows in, indexes rebuilt. */
async function loadJobs(ds: DataSource, total: number, target: number): Promise<void> {
  const indexes = await ds.query<{ indexname: string; indexdef: string }[]>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs' AND indexname <> 'jobs_pkey'`,
  );
  for (const i of indexes) await ds.query(`DROP INDEX ${i.indexname}`);
  await ds.query(`TRUNCATE jobs`);
  const payload = JSON.stringify({ invoice: 'inv_0000000000', amount: 12345, currency: 'EUR', customer: 'cus_abcdefghij' });
  // Target rows: `target` rows spread evenly across one UTC hour, 23 h ahead.
  await ds.query(
    `INSERT INTO jobs (run_at, tenant_id, kind, key, payload, state)
     SELECT $1::timestamptz + (g::bigint * 3599000 / $2) * interval '1 millisecond', 1 + g % 4, 'noop', 'due-' || g, $3::jsonb, 's'
       FROM generate_series(0, $2 - 1) g`,
    [TARGET_HOUR, target, payload],
  );
  const background = total - target;
  const chunk = 1_000_000;
  for (let from = 0; from < background; from += chunk) {
    const n = Math.min(chunk, background - from);
    const [, ms] = await timed(() =>
      ds.query(
        `INSERT INTO jobs (run_at, tenant_id, kind, key, payload, state)
         SELECT $1::timestamptz + ((g::bigint * 7919) % (365 * 86400)) * interval '1 second', 1 + g % 4, 'noop', 'bg-' || g, $2::jsonb, 's'
           FROM generate_series($3::bigint, $3::bigint + $4 - 1) g`,
        [BACKGROUND_FROM, payload, from, n],
      ),
    );
    log(`  loaded ${from + n}/${background} background rows (${(n / ms).toFixed(0)}k rows/s)`);
  }
  await ds.query(`SET maintenance_work_mem = '512MB'`);
  for (const i of indexes) {
    const [, ms] = await timed(() => ds.query(i.indexdef));
    log(`  rebuilt ${i.indexname} in ${(ms / 1000).toFixed(1)} s`);
  }
  await ds.query(`VACUUM ANALYZE jobs`);
}

interface PromotionFigures {
  tableRows: number;
  promoted: number;
  runsMs: number[];
  medianMs: number;
  usPerRow: number;
  /** CPU per promoted row (node + redis + postgres), median of runs: the load-independent figure. */
  cpuUsPerRow: number;
  cpuRuns: CpuSplit[];
  claimOnlyCpuUsPerRow: number;
  claimOnlyRunsMs: number[];
  claimOnlyUsPerRow: number;
  overdueNothingRunsMs: number[];
  overdueNothingMedianMs: number;
}

/** Puts the promoted rows back (cold) and empties Redis, so every run does the same work. */
async function resetPromotion(ds: DataSource, redis: PrivateRedis): Promise<void> {
  await ds.query(`UPDATE jobs SET state = 's' WHERE state = 'q'`);
  await ds.query(`VACUUM jobs`);
  await redis.connection.flushall();
}

async function benchTableSize(args: Args, size: number, redis: PrivateRedis): Promise<PromotionFigures> {
  const name = `almanac_bench_promote_${size}`;
  const marker = `jobs:${size}:${args.promote}`;
  const [ds, loaded] = await openDatabase(name, args.reuse, marker);
  try {
    if (!loaded) {
      log(`${name}: loading ${size} rows (${args.promote} due in one hour)`);
      const [, ms] = await timed(() => loadJobs(ds, size, args.promote));
      await ds.query(`INSERT INTO bench_marker VALUES ($1) ON CONFLICT DO NOTHING`, [marker]);
      log(`${name}: loaded in ${(ms / 1000).toFixed(0)} s`);
    }
    const repo = new SweepsRepository(ds);
    const queue = HotQueue.open(redis.connection, 'bench');
    const opts = { hotHorizonMs: DAY, batchSize: 5000, maxPerRun: 10_000_000, concurrency: args.concurrency };
    const promotion = new PromotionSweep(repo, queue, opts);
    const claimOnly = new PromotionSweep(repo, { enqueue: async () => undefined }, opts);

    const runsMs: number[] = [];
    const claimOnlyRunsMs: number[] = [];
    const cpuRuns: CpuSplit[] = [];
    const claimOnlyCpu: number[] = [];
    let promoted = 0;
    for (let r = 0; r < (args.overdueOnly ? 0 : args.runs); r++) {
      await resetPromotion(ds, redis);
      const [res, ms, cpu] = await measured(ds, redis.pid, () => promotion.runOnce(NOW));
      promoted = res.promoted;
      runsMs.push(ms);
      cpuRuns.push(cpu);
      log(`${name}: promotion run ${r + 1}: ${res.promoted} rows in ${ms.toFixed(0)} ms, cpu ms ${JSON.stringify(cpu)}`);
      await resetPromotion(ds, redis);
      const [res2, ms2, cpu2] = await measured(ds, redis.pid, () => claimOnly.runOnce(NOW));
      claimOnlyRunsMs.push(ms2);
      claimOnlyCpu.push(cpuTotal(cpu2));
      log(`${name}: claim+mark only (no Redis) run ${r + 1}: ${res2.promoted} rows in ${ms2.toFixed(0)} ms, cpu ms ${JSON.stringify(cpu2)}`);
    }

    // Overdue sweep with nothing to do: the promoted rows are queued 23 h ahead (not overdue), no
    // leases, no cold row due within 30 s, Redis marker in place.
    await resetPromotion(ds, redis);
    promoted = (await promotion.runOnce(NOW)).promoted;
    // Steady state: autovacuum has analysed the table since the hot rows became queued.
    await ds.query('ANALYZE jobs');
    const lost = new LostHints(new KindRoutes(new Map()), new KindCatalog(new KindsRepository(ds), { maxAgeMs: 0, missRefreshMs: 0 }), new ReadyQueues(redis.connection, 'bench'));
    const overdue = new OverdueSweep(repo, queue, lost, new RedisEpoch(redis.connection, 'bench'), promotion, {
      graceMs: 30_000,
      lookaheadMs: 30_000,
      batchSize: 5000,
      maxPerRun: 200_000,
    });
    const first = await overdue.runOnce(NOW); // first sight of this Redis: writes the marker (re-enqueues the queued rows)
    log(`${name}: overdue first run (marker written): ${JSON.stringify(first.requeued)}`);
    const overdueNothingRunsMs: number[] = [];
    for (let r = 0; r < Math.max(5, args.runs); r++) {
      const [res, ms] = await timed(() => overdue.runOnce(NOW));
      const did = Object.values(res.requeued).reduce((a, b) => a + b, 0);
      if (did !== 0 || res.redis !== 'ok') throw new Error(`overdue sweep found work: ${JSON.stringify(res)}`);
      overdueNothingRunsMs.push(ms);
    }
    log(`${name}: overdue sweep, nothing to do: ${overdueNothingRunsMs.map((m) => m.toFixed(1)).join(', ')} ms`);
    await queue.close();

    const medianMs = median(runsMs);
    return {
      tableRows: size,
      promoted,
      runsMs,
      medianMs,
      usPerRow: (medianMs * 1000) / promoted,
      cpuUsPerRow: cpuRuns.length ? (median(cpuRuns.map(cpuTotal)) * 1000) / promoted : NaN,
      cpuRuns,
      claimOnlyCpuUsPerRow: claimOnlyCpu.length ? (median(claimOnlyCpu) * 1000) / promoted : NaN,
      claimOnlyRunsMs,
      claimOnlyUsPerRow: (median(claimOnlyRunsMs) * 1000) / promoted,
      overdueNothingRunsMs,
      overdueNothingMedianMs: median(overdueNothingRunsMs),
    };
  } finally {
    await ds.destroy();
    if (!args.reuse) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

interface RecurringFigures {
  schedules: number;
  runsMs: number[];
  occurrences: number;
  occurrencesPerSecond: number;
  cpuRuns: CpuSplit[];
  /** Occurrences per CPU second (node + postgres): what one idle core pair would sustain, roughly. */
  occurrencesPerCpuSecond: number;
}

async function benchRecurring(args: Args): Promise<RecurringFigures> {
  const name = 'almanac_bench_recurring';
  const marker = `schedules:${args.schedules}`;
  const [ds, loaded] = await openDatabase(name, args.reuse, marker);
  // Hourly at :00 UTC; with now = 00:10 and a 24 h horizon, each schedule whose cursor is the
  // last hour of the window materialises exactly one occurrence (its 00:00 next day).
  const due = new Date(NOW.getTime() + DAY - 10 * 60e3);
  try {
    if (!loaded) {
      log(`${name}: loading ${args.schedules} hourly schedules`);
      await ds.query(`TRUNCATE schedules`);
      await ds.query(
        `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, next_run_at, payload)
         SELECT 1 + g % 4, 'hourly-' || g, 'noop', '0 * * * *', 'UTC', $1, '{"report":"hourly"}'::jsonb
           FROM generate_series(1, $2) g`,
        [due, args.schedules],
      );
      await ds.query(`VACUUM ANALYZE schedules`);
      await ds.query(`INSERT INTO bench_marker VALUES ($1) ON CONFLICT DO NOTHING`, [marker]);
    }
    const sweep = new RecurringSweep(new RecurringRepository(ds), new SchedulePlanner({ missedCap: 1000, lateToleranceMs: 300_000 }), {
      horizonMs: DAY, // a day ahead: one occurrence per hourly schedule here, the rate being the figure
      batchSize: 1000,
      maxPerRun: 100_000_000,
      concurrency: args.concurrency,
      // The production defaults (ALMANAC_RECURRING_*): one occurrence per schedule here, so the
      // row and byte budgets never bind; 250,000 occurrences per tenant exceed the default
      // per-run quota, which is what the runner's next run is for: measured as one long run.
      maxBatchRows: 20_000,
      maxBatchBytes: 16 * 1024 * 1024,
      maxPerTenantPerRun: Number.MAX_SAFE_INTEGER,
      nearMs: 6 * 60_000, // no schedule here is due that soon: one index probe per run
    });
    const runsMs: number[] = [];
    const cpuRuns: CpuSplit[] = [];
    let occurrences = 0;
    for (let r = 0; r < args.runs; r++) {
      await ds.query(`TRUNCATE jobs`);
      await ds.query(`UPDATE schedules SET next_run_at = $1`, [due]);
      await ds.query(`VACUUM ANALYZE schedules`);
      const [res, ms, cpu] = await measured(ds, 0, () => sweep.runOnce(NOW));
      occurrences = res.inserted;
      runsMs.push(ms);
      cpuRuns.push(cpu);
      log(`${name}: run ${r + 1}: ${res.schedules} schedules, ${res.inserted} rows in ${ms.toFixed(0)} ms (${((res.inserted / ms) * 1000).toFixed(0)}/s)`);
    }
    return {
      schedules: args.schedules,
      runsMs,
      occurrences,
      occurrencesPerSecond: (occurrences / median(runsMs)) * 1000,
      cpuRuns,
      occurrencesPerCpuSecond: (occurrences / median(cpuRuns.map(cpuTotal))) * 1000,
    };
  } finally {
    await ds.destroy();
    if (!args.reuse) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

/** The fair-promotion scenario's quiet rows: 6 spread over the noisy hour, one already overdue. */
const FAIR_HOUR = new Date('2026-12-01T00:00:00Z');
const QUIET_MINUTES = [5, 15, 25, 35, 45, 55];

interface FairFigures {
  noisyRows: number;
  promoted: number;
  runsMs: number[];
  /** Wall µs per 100k promoted rows, per run. */
  usPer100kRows: number[];
  /** Per run: ms from the run's start until each quiet row's batch was published (QUIET_MINUTES order). */
  quietPublishedMs: number[][];
  /** Per run, per quiet row not yet due at NOW: run time − (NOW + publish delay), ms; negative = late. */
  slackMs: number[][];
  worstSlackMs: number;
}

/**
 * Issue 15 item 5: tenant 1 has `args.fair` rows due in one hour (inserted first, so they come
 * first in the index), tenant 2 has 6 rows spread over that hour, and the promoter catches up at
 * NOW = 00:10 inside it (down, or Redis was). Records when each quiet row was published; the
 * bench's clock is NOW + elapsed wall time. Background: 1 M rows over the following year.
 */
/** Noisy rows first (first in the heap and in each index's posting lists), then quiet, then background. */
async function loadFair(ds: DataSource, noisy: number): Promise<void> {
  const indexes = await ds.query<{ indexname: string; indexdef: string }[]>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs' AND indexname <> 'jobs_pkey'`,
  );
  for (const i of indexes) await ds.query(`DROP INDEX ${i.indexname}`);
  await ds.query(`TRUNCATE jobs`);
  const payload = JSON.stringify({ invoice: 'inv_0000000000', amount: 12345, currency: 'EUR', customer: 'cus_abcdefghij' });
  for (let from = 0; from < noisy; from += 1_000_000) {
    const n = Math.min(1_000_000, noisy - from);
    await ds.query(
      `INSERT INTO jobs (run_at, tenant_id, kind, key, payload, state)
       SELECT $1::timestamptz + (g::bigint * 3599000 / $2) * interval '1 millisecond', 1, 'noop', 'noisy-' || g, $5::jsonb, 's'
         FROM generate_series($3::bigint, $3::bigint + $4 - 1) g`,
      [FAIR_HOUR, noisy, from, n, payload],
    );
    log(`  loaded ${from + n}/${noisy} noisy rows`);
  }
  await ds.query(
    `INSERT INTO jobs (run_at, tenant_id, kind, key, payload, state)
     SELECT $1::timestamptz + m * interval '1 minute', 2, 'noop', 'quiet-' || m, $3::jsonb, 's' FROM unnest($2::int[]) m`,
    [FAIR_HOUR, QUIET_MINUTES, payload],
  );
  await ds.query(
    `INSERT INTO jobs (run_at, tenant_id, kind, key, payload, state)
     SELECT $1::timestamptz + ((g::bigint * 7919) % (365 * 86400)) * interval '1 second', 3 + g % 4, 'noop', 'bg-' || g, $2::jsonb, 's'
       FROM generate_series(0, 999999) g`,
    [BACKGROUND_FROM, payload],
  );
  await ds.query(`SET maintenance_work_mem = '512MB'`);
  for (const i of indexes) await ds.query(i.indexdef);
  await ds.query(`VACUUM ANALYZE jobs`);
}

async function benchFair(args: Args, redis: PrivateRedis): Promise<FairFigures> {
  const name = `almanac_bench_fair_${args.fair}`;
  const marker = `fair:${args.fair}`;
  const [ds, loaded] = await openDatabase(name, args.reuse, marker);
  try {
    if (!loaded) {
      log(`${name}: loading ${args.fair} noisy rows in one hour`);
      await loadFair(ds, args.fair);
      await ds.query(`INSERT INTO bench_marker VALUES ($1) ON CONFLICT DO NOTHING`, [marker]);
    }
    const quietIds = (await ds.query<{ id: string }[]>(`SELECT id::text AS id FROM jobs WHERE tenant_id = 2 AND key LIKE 'quiet-%' ORDER BY run_at`)).map((r) => r.id);
    const runAtOf = (i: number) => FAIR_HOUR.getTime() + QUIET_MINUTES[i] * 60e3;
    const repo = new SweepsRepository(ds);
    const queue = HotQueue.open(redis.connection, 'bench');
    const runsMs: number[] = [];
    const quietPublishedMs: number[][] = [];
    const slackMs: number[][] = [];
    let promoted = 0;
    for (let r = 0; r < args.runs; r++) {
      await ds.query(`UPDATE jobs SET state = 's' WHERE state = 'q'`);
      await ds.query(`VACUUM ANALYZE jobs`);
      await redis.connection.flushall();
      const published = new Map<string, number>();
      const t0 = performance.now();
      const recording = {
        enqueue: async (rows: Parameters<HotQueue['enqueue']>[0], now: Date) => {
          await queue.enqueue(rows, now);
          const at = performance.now() - t0;
          for (const row of rows) if (quietIds.includes(row.id)) published.set(row.id, at);
        },
      };
      const sweep = new PromotionSweep(repo, recording, { hotHorizonMs: DAY, batchSize: 5000, maxPerRun: 100_000_000, concurrency: args.concurrency });
      const [res, ms] = await timed(() => sweep.runOnce(NOW));
      promoted = res.promoted;
      runsMs.push(ms);
      const at = quietIds.map((id) => published.get(id) ?? NaN);
      quietPublishedMs.push(at);
      slackMs.push(at.map((a, i) => runAtOf(i) - (NOW.getTime() + a)).filter((_, i) => runAtOf(i) > NOW.getTime()));
      log(`${name}: run ${r + 1}: ${res.promoted} rows in ${ms.toFixed(0)} ms; quiet rows published at ${at.map((a) => a.toFixed(0)).join(', ')} ms`);
    }
    await queue.close();
    return {
      noisyRows: args.fair,
      promoted,
      runsMs,
      usPer100kRows: runsMs.map((ms) => (ms * 1000 * 100_000) / promoted),
      quietPublishedMs,
      slackMs,
      worstSlackMs: Math.min(...slackMs.flat()),
    };
  } finally {
    await ds.destroy();
    if (!args.reuse) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  Logger.overrideLogger(false); // the sweeps' Nest logs would land in the JSON on stdout
  quiet = args.jsonOnly;
  const redis = await startPrivateRedis();
  stopRedis = () => redis.stop();
  try {
    const fair = args.fair > 0 ? await benchFair(args, redis) : null;
    const promotion: PromotionFigures[] = [];
    if (!args.fairOnly) for (const size of args.sizes) promotion.push(await benchTableSize(args, size, redis));
    const recurring = args.schedules > 0 && !args.fairOnly ? await benchRecurring(args) : null;
    const [small, big] = [promotion[0], promotion[promotion.length - 1]] as (PromotionFigures | undefined)[];
    const result = {
      bench: 'promote',
      at: new Date().toISOString(),
      args,
      promotion,
      perRowRatioBiggestVsSmallest: small && big && promotion.length > 1 ? big.usPerRow / small.usPerRow : null,
      loadAverage: os.loadavg(),
      cpus: os.cpus().length,
      recurring,
      fair,
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    if (!args.jsonOnly) {
      const rows = [
        ['table rows', 'promoted', 'median s', 'µs/row (wall)', 'cpu µs/row', 'claim-only cpu µs/row', 'overdue idle ms'],
        ...promotion.map((p) => [
          p.tableRows.toLocaleString('en'),
          p.promoted.toLocaleString('en'),
          (p.medianMs / 1000).toFixed(2),
          p.usPerRow.toFixed(1),
          p.cpuUsPerRow.toFixed(1),
          p.claimOnlyCpuUsPerRow.toFixed(1),
          p.overdueNothingMedianMs.toFixed(1),
        ]),
      ];
      const w = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
      for (const r of rows) process.stderr.write(`${r.map((c, i) => c.padStart(w[i])).join('  ')}\n`);
      if (fair) {
        process.stderr.write(
          `fair: ${fair.noisyRows.toLocaleString('en')} noisy rows in one hour, catching up at its :10; ${fair.usPer100kRows.map((u) => (u / 1e6).toFixed(2)).join(', ')} s per 100k rows; quiet rows published after ${fair.quietPublishedMs.map((r) => r.map((m) => (m / 1000).toFixed(1)).join('/')).join(', ')} s; worst slack to run time ${(fair.worstSlackMs / 1000).toFixed(1)} s\n`,
        );
      }
      if (recurring) {
        process.stderr.write(
          `recurring: ${recurring.schedules.toLocaleString('en')} hourly schedules → ${recurring.occurrences.toLocaleString('en')} rows, median ${(median(recurring.runsMs) / 1000).toFixed(2)} s = ${recurring.occurrencesPerSecond.toFixed(0)} occurrences/s wall, ${recurring.occurrencesPerCpuSecond.toFixed(0)} per CPU second\n`,
        );
      }
    }
  } finally {
    await redis.stop();
  }
}

// Ctrl-C: stop the private redis-server too (it is a child, but would outlive a killed parent).
let stopRedis: (() => Promise<void>) | null = null;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void (stopRedis?.() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
