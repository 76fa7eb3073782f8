/**
 * The due-soon sweep's cost on a big table (issue 19 item 1): what computing
 * `almanac_jobs_due{pool, within}` every 15 s costs the promoter and Postgres.
 *
 *   node -r ./bench/lib/register.cjs bench/due-soon.ts [--rows 10000000] [--spike 200000] [--runs 5]
 *
 * On a fresh database (`ALMANAC_BENCH_PG_URL`): `--rows` jobs of 4 kinds in 2 pools, as a year of
 * work looks at 1 M jobs a day: the next 24 h queued (1 M rows, the hot horizon), the rest cold over
 * the year; plus a `--spike` of queued jobs due at one instant 10 minutes from now (the 09:00
 * invoices). Loaded with INSERT … SELECT generate_series, indexes built after, then VACUUM ANALYZE.
 * Then `--runs` timed `DueSoonSweep.runOnce(now)` (the production code), a second set with the spike
 * gone (a quiet hour), and EXPLAIN (ANALYZE, BUFFERS) of the statement with the spike.
 * Prints one JSON document (stdout) and a table (stderr).
 */
import { DueSoonRepository } from '@almanac/persistence';
import { MetricsService } from '@almanac/platform';
import type { DataSource } from 'typeorm';
import { DueSoonSweep } from '../apps/promoter/src/sweeps/due-soon.sweep';
import { SweepMetrics } from '../apps/promoter/src/sweeps/sweep-metrics';
import { DUE_SOON_BY_POOL_SQL } from '../libs/persistence/src/statements/due-soon-by-pool.sql';
import { createBenchDatabase } from './lib/bench-db';
import { arg } from './lib/local';
import { round, spread } from './lib/stats';

const opts = { rows: Number(arg('rows', '10000000')), spike: Number(arg('spike', '200000')), runs: Number(arg('runs', '5')) };
const NOW = new Date('2026-12-01T08:50:00Z');
const DAY = 86_400_000;
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} due-soon: ${m}\n`);

async function load(ds: DataSource): Promise<void> {
  await ds.query(`INSERT INTO job_kinds (kind, pool, timeout_ms, registered_by, registered_at)
                  VALUES ('noop', 'default', 30000, 'bench', now()), ('charge', 'default', 30000, 'bench', now()),
                         ('http', 'io', 30000, 'bench', now()), ('email', 'io', 30000, 'bench', now())`);
  const indexes = await ds.query<{ indexname: string; indexdef: string }[]>(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs' AND indexname <> 'jobs_pkey'`);
  for (const i of indexes) await ds.query(`DROP INDEX ${i.indexname}`);
  const hot = Math.min(1_000_000, opts.rows);
  const insert = (from: number, n: number, state: string, startMs: number, spanMs: number) =>
    ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state, payload)
       SELECT 1 + g % 50, $6 || g, (ARRAY['noop','charge','http','email'])[1 + g % 4], $3::timestamptz + ((g::bigint * 7919) % $4::bigint) * interval '1 millisecond', $5::"char", '{"n":1}'
         FROM generate_series($1::bigint, $1::bigint + $2 - 1) g`,
      [from, n, new Date(startMs), Math.max(1, spanMs), state, `${state}-`],
    );
  await insert(0, hot, 'q', NOW.getTime(), DAY);
  for (let from = 0; from < opts.rows - hot; from += 1_000_000) {
    await insert(from, Math.min(1_000_000, opts.rows - hot - from), 's', NOW.getTime() + DAY, 364 * DAY);
    log(`loaded ${(hot + from + 1_000_000).toLocaleString('en')} rows`);
  }
  await ds.query(
    `INSERT INTO jobs (tenant_id, key, kind, run_at, state, payload) SELECT 7, 'spike-' || g, 'charge', $1, 'q', '{"n":1}' FROM generate_series(1, $2) g`,
    [new Date(NOW.getTime() + 10 * 60_000), opts.spike],
  );
  await ds.query(`SET maintenance_work_mem = '512MB'`);
  for (const i of indexes) await ds.query(i.indexdef);
  await ds.query(`VACUUM ANALYZE jobs`);
}

async function timeRuns(sweep: DueSoonSweep): Promise<{ ms: number[]; io1h: number; default1h: number }> {
  const ms: number[] = [];
  let last;
  for (let i = 0; i < opts.runs; i++) {
    const t0 = performance.now();
    last = await sweep.runOnce(NOW);
    ms.push(round(performance.now() - t0, 1));
  }
  return { ms, io1h: last?.byPool.get('io')?.['1h'] ?? 0, default1h: last?.byPool.get('default')?.['1h'] ?? 0 };
}

async function main(): Promise<void> {
  const db = await createBenchDatabase('almanac_bench_due_soon');
  try {
    log(`loading ${opts.rows.toLocaleString('en')} rows and a spike of ${opts.spike.toLocaleString('en')}`);
    await load(db.dataSource);
    const [{ size }] = await db.dataSource.query<{ size: string }[]>(`SELECT pg_size_pretty(pg_total_relation_size('jobs')) AS size`);
    const sweep = new DueSoonSweep(new DueSoonRepository(db.dataSource), 1_000_000, new SweepMetrics(new MetricsService()));
    await sweep.runOnce(NOW); // warm the cache as a running promoter's would be
    const withSpike = await timeRuns(sweep);
    // As DueSoonRepository runs it: bitmap scans off, so the LIMIT bounds the walk.
    const plan = await db.dataSource.transaction(async (m) => {
      await m.query(`SET LOCAL enable_bitmapscan = off`);
      const rows = await m.query<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) ${DUE_SOON_BY_POOL_SQL}`, [NOW, new Date(NOW.getTime() + 3600_000), 1_000_000]);
      return rows.map((r) => r['QUERY PLAN']);
    });
    await db.dataSource.query(`DELETE FROM jobs WHERE key LIKE 'spike-%'`);
    await db.dataSource.query(`VACUUM ANALYZE jobs`);
    const quiet = await timeRuns(sweep);
    const summary = {
      spikeMs: spread(withSpike.ms),
      quietMs: spread(quiet.ms),
      rowsReadSpike: withSpike.io1h + withSpike.default1h,
      rowsReadQuiet: quiet.io1h + quiet.default1h,
      usPerRowSpike: round((spread(withSpike.ms).median * 1000) / Math.max(1, withSpike.io1h + withSpike.default1h), 2),
    };
    const result = { bench: 'due-soon', at: new Date().toISOString(), inputs: { ...opts, tableSize: size }, summary, plan };
    process.stderr.write(
      `\n| figure (median of ${opts.runs}) | value |\n|---|---|\n` +
        `| runOnce with ${opts.spike.toLocaleString('en')} due in 10 min (${summary.rowsReadSpike.toLocaleString('en')} rows in the hour) | ${summary.spikeMs.median} ms (${summary.spikeMs.min}–${summary.spikeMs.max}) |\n` +
        `| per row read | ${summary.usPerRowSpike} µs |\n` +
        `| runOnce, a quiet hour (${summary.rowsReadQuiet.toLocaleString('en')} rows) | ${summary.quietMs.median} ms (${summary.quietMs.min}–${summary.quietMs.max}) |\n` +
        `| table | ${opts.rows.toLocaleString('en')} rows, ${size} |\n\n`,
    );
    process.stdout.write(JSON.stringify(result) + '\n');
  } finally {
    await db.drop();
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`due-soon: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
