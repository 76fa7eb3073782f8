/**
 * Bulk operations (issue 17 item 3): a tenant's campaign of 500,000 jobs rescheduled, then
 * cancelled, by filter, beside another tenant's 500,000.
 *
 *   node -r ./bench/lib/register.cjs bench/bulk.ts [--runs 3] [--jobs 500000] [--hot-share 0.143]
 *
 * Per run, on a fresh database (`ALMANAC_BENCH_PG_URL`) and a private redis-server:
 * - load: the campaign tenant's `--jobs` jobs (keys `campaign:<n>`), spread evenly over the next
 *   7 days, and as many of another tenant's over the same week; the first `--hot-share` (a day of the
 *   week) of each tenant's are due within the hot horizon, queued with a `j-<id>` copy in the hot queue each
 *   (what promotion would have left there); the rest are scheduled (cold).
 * - reschedule: `POST /v1/jobs/bulk-reschedule`'s row (BulkOperationsRepository.create) with
 *   `{"keyPrefix": "campaign:"}` and `shiftBySeconds: 3600`, then the promoter's bulk sweep
 *   (`BulkOperationsSweep.runOnce`, the production code) until it is done: wall time, the match
 *   (snapshot) time, each chunk's statement time (how long its row locks are held), WAL bytes.
 * - cancel: the same with bulk-cancel (target: 500,000 in ≤ 60 s).
 * - baseline: the other tenant's jobs cancelled by one plain `UPDATE … WHERE tenant_id = …`, the
 *   floor (one statement holding every row lock until it commits), in the same run.
 * Checks after each: every campaign job changed exactly once, the other tenant's untouched.
 * Prints one JSON document (stdout) and a table (stderr).
 */
import { BULK_CHUNK_JOBS, type BulkChange } from '@almanac/domain';
import { BulkOperationsRepository, TenantsRepository } from '@almanac/persistence';
import { HotQueue, MetricsService } from '@almanac/platform';
import type { DataSource } from 'typeorm';
import { BulkOperationsSweep } from '../apps/promoter/src/bulk/bulk-operations.sweep';
import { SweepMetrics } from '../apps/promoter/src/sweeps/sweep-metrics';
import { startPrivateRedis } from '../test/support/private-redis';
import { createBenchDatabase, walPosition } from './lib/bench-db';
import { arg } from './lib/local';
import { round, spread } from './lib/stats';

const opts = { runs: Number(arg('runs', '3')), jobs: Number(arg('jobs', '500000')), hotShare: Number(arg('hot-share', String(1 / 7))) };
const HOUR = 3600e3;
const WEEK = 7 * 24 * HOUR;
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} bulk: ${m}\n`);

interface Phase {
  seconds: number;
  matchSeconds: number;
  chunks: number;
  chunkMsP50: number;
  chunkMsMax: number;
  changed: number;
  hotCopiesBefore: number;
  hotCopiesAfter: number;
  walBytesPerJob: number;
}


/** `n` jobs of one tenant over the next week; the first `hot` of them queued. Returns nothing: ids come from the filter. */
async function load(ds: DataSource, tenantId: number, prefix: string, n: number, hot: number, now: Date): Promise<void> {
  await ds.query(
    `INSERT INTO jobs (tenant_id, key, kind, run_at, state, payload)
     SELECT $1, $2 || g, 'noop', $3::timestamptz + (g * $4::float8) * interval '1 millisecond', CASE WHEN g < $6 THEN 'q' ELSE 's' END::"char", '{"n":1}'
       FROM generate_series(0, $5 - 1) g`,
    [tenantId, prefix, new Date(now.getTime() + 60_000), WEEK / n, n, hot],
  );
}

async function enqueueHot(ds: DataSource, queue: HotQueue, tenantId: number, now: Date): Promise<number> {
  const rows = await ds.query<{ id: string; run_at: Date }[]>(`SELECT id::text, run_at FROM jobs WHERE tenant_id = $1 AND state = 'q' ORDER BY id`, [tenantId]);
  for (let i = 0; i < rows.length; i += 5000) {
    await queue.enqueue(rows.slice(i, i + 5000).map((r) => ({ id: r.id, dueMs: r.run_at.getTime(), tenantId, kind: 'noop' })), now);
  }
  return rows.length;
}

async function hotCopies(queue: HotQueue): Promise<number> {
  return (await queue.queue.getJobCountByTypes('delayed', 'waiting'));
}

/** Runs one operation through the sweep until done, timing the match and each chunk. */
async function operate(ds: DataSource, repo: BulkOperationsRepository, queue: HotQueue, tenantId: number, change: BulkChange | null, now: Date): Promise<Phase> {
  const sweep = new BulkOperationsSweep(repo, queue, { hotHorizonMs: 24 * HOUR, maxJobs: 1_000_000, chunksPerRun: 1 }, new SweepMetrics(new MetricsService()));
  const hotCopiesBefore = await hotCopies(queue);
  const wal0 = await walPosition(ds);
  const t0 = performance.now();
  const op = (await repo.create(tenantId, change ? 'reschedule' : 'cancel', { keyPrefix: 'campaign:' }, change, 5))!.op;
  let matchSeconds = 0;
  const chunkMs: number[] = [];
  for (;;) {
    const t = performance.now();
    const r = await sweep.runOnce(now);
    const ms = performance.now() - t;
    if (r.matched > 0) matchSeconds = ms / 1000; // the first run matches (its one chunk is timed with it)
    else if (r.chunks > 0) chunkMs.push(ms);
    if (!r.more) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  const done = (await repo.findForTenant(tenantId, op.id))!;
  if (done.state !== 'done') throw new Error(`operation ended ${done.state}: ${done.error}`);
  chunkMs.sort((a, b) => a - b);
  return {
    seconds: round(seconds, 2),
    matchSeconds: round(matchSeconds, 2),
    chunks: done.chunks ?? 0,
    chunkMsP50: round(chunkMs[chunkMs.length >> 1] ?? 0),
    chunkMsMax: round(chunkMs[chunkMs.length - 1] ?? 0),
    changed: done.changed,
    hotCopiesBefore,
    hotCopiesAfter: await hotCopies(queue),
    walBytesPerJob: round(Number((await walPosition(ds)) - wal0) / Math.max(1, done.changed)),
  };
}

async function states(ds: DataSource, tenantId: number): Promise<Record<string, number>> {
  const rows = await ds.query<{ state: string; n: string }[]>(`SELECT state, count(*) AS n FROM jobs WHERE tenant_id = $1 GROUP BY state`, [tenantId]);
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

async function run(i: number) {
  const db = await createBenchDatabase('almanac_bench_bulk', 4);
  const redis = await startPrivateRedis();
  const queue = HotQueue.open(redis.connection, 'bench', 10_000);
  try {
    const ds = db.dataSource;
    const tenants = new TenantsRepository(ds);
    const campaign = (await tenants.create('campaign')).tenant.id;
    const other = (await tenants.create('other')).tenant.id;
    const now = new Date();
    const tl = performance.now();
    // Interleaved ids: the other tenant's rows share the table's pages and indexes with the campaign's.
    for (let part = 0; part < 10; part++) {
      const n = opts.jobs / 10;
      await load(ds, campaign, `campaign:${part}:`, n, Math.round(n * opts.hotShare), now);
      await load(ds, other, `campaign:${part}:`, n, Math.round(n * opts.hotShare), now);
    }
    await ds.query('VACUUM ANALYZE jobs');
    const queued = (await enqueueHot(ds, queue, campaign, now)) + (await enqueueHot(ds, queue, other, now));
    log(`run ${i}: loaded ${(2 * opts.jobs).toLocaleString('en')} jobs (${queued.toLocaleString('en')} queued with hot copies) in ${round((performance.now() - tl) / 1000, 1)} s`);

    const repo = new BulkOperationsRepository(ds);
    const reschedule = await operate(ds, repo, queue, campaign, { shiftBySeconds: 3600 }, now);
    const afterReschedule = await states(ds, campaign);
    log(`run ${i}: reschedule ${reschedule.changed.toLocaleString('en')} in ${reschedule.seconds} s (match ${reschedule.matchSeconds} s, chunk p50 ${reschedule.chunkMsP50} / max ${reschedule.chunkMsMax} ms; hot copies ${reschedule.hotCopiesBefore} → ${reschedule.hotCopiesAfter})`);
    const cancel = await operate(ds, repo, queue, campaign, null, now);
    log(`run ${i}: cancel ${cancel.changed.toLocaleString('en')} in ${cancel.seconds} s (match ${cancel.matchSeconds} s, chunk p50 ${cancel.chunkMsP50} / max ${cancel.chunkMsMax} ms; hot copies ${cancel.hotCopiesBefore} → ${cancel.hotCopiesAfter})`);
    const afterCancel = await states(ds, campaign);
    const untouched = await states(ds, other);

    const wal0 = await walPosition(ds);
    const tb = performance.now();
    const [, baselineRows] = await ds.query(`UPDATE jobs SET state = 'c', finished_at = now() WHERE tenant_id = $1 AND key LIKE 'campaign:%' AND state IN ('s', 'q')`, [other]);
    const baselineSeconds = round((performance.now() - tb) / 1000, 2);
    const baselineWal = round(Number((await walPosition(ds)) - wal0) / Math.max(1, Number(baselineRows)));
    log(`run ${i}: baseline, one UPDATE of ${Number(baselineRows).toLocaleString('en')} rows: ${baselineSeconds} s`);
    const dbBytes = Number((await ds.query(`SELECT pg_database_size(current_database()) AS b`))[0].b);
    return { run: i, reschedule, cancel, baselineSeconds, baselineWalBytesPerJob: baselineWal, afterReschedule, afterCancel, otherBeforeBaseline: untouched, dbBytes };
  } finally {
    await queue.close();
    await redis.stop();
    await db.drop();
  }
}

async function main() {
  log(`${opts.runs} run(s), ${opts.jobs.toLocaleString('en')} campaign jobs + as many of another tenant, ${round(opts.hotShare * 100, 1)} % queued, chunks of ${BULK_CHUNK_JOBS}`);
  const runs: Awaited<ReturnType<typeof run>>[] = [];
  for (let i = 1; i <= opts.runs; i++) runs.push(await run(i));
  for (const r of runs) {
    const ok = r.afterReschedule.q + (r.afterReschedule.s ?? 0) === opts.jobs && r.afterCancel.c === opts.jobs && (r.otherBeforeBaseline.c ?? 0) === 0;
    if (!ok) throw new Error(`run ${r.run}: wrong states ${JSON.stringify(r)}`);
  }
  const s = (f: (r: (typeof runs)[number]) => number) => spread(runs.map(f));
  const summary = {
    cancelSeconds: s((r) => r.cancel.seconds),
    rescheduleSeconds: s((r) => r.reschedule.seconds),
    baselineSeconds: s((r) => r.baselineSeconds),
    cancelVsBaseline: s((r) => round(r.cancel.seconds / r.baselineSeconds, 2)),
    matchSeconds: s((r) => r.cancel.matchSeconds),
    chunkMsMax: s((r) => Math.max(r.cancel.chunkMsMax, r.reschedule.chunkMsMax)),
    cancelWalBytesPerJob: s((r) => r.cancel.walBytesPerJob),
    rescheduleWalBytesPerJob: s((r) => r.reschedule.walBytesPerJob),
    baselineWalBytesPerJob: s((r) => r.baselineWalBytesPerJob),
  };
  const f = (x: { median: number; min: number; max: number }, unit: string) => `${x.median}${unit} (${x.min}–${x.max})`;
  process.stderr.write(
    `\n| ${opts.jobs.toLocaleString('en')} jobs of one tenant, medians of ${opts.runs} | |\n|---|---|\n` +
      `| bulk cancel, 202 → done | ${f(summary.cancelSeconds, ' s')} |\n` +
      `| bulk reschedule (+1 h), 202 → done | ${f(summary.rescheduleSeconds, ' s')} |\n` +
      `| baseline: one plain UPDATE of as many rows | ${f(summary.baselineSeconds, ' s')} |\n` +
      `| match (snapshot of the ids) | ${f(summary.matchSeconds, ' s')} |\n` +
      `| longest chunk step (hot-copy removal, statement, re-enqueue) | ${f(summary.chunkMsMax, ' ms')} |\n` +
      `| WAL per job: cancel / reschedule / baseline | ${summary.cancelWalBytesPerJob.median} / ${summary.rescheduleWalBytesPerJob.median} / ${summary.baselineWalBytesPerJob.median} B |\n`,
  );
  process.stdout.write(`${JSON.stringify({ bench: 'bulk', at: new Date().toISOString(), inputs: { ...opts, chunkJobs: BULK_CHUNK_JOBS }, summary, runs })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
