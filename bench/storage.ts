/**
 * Issue-2 storage figures: bytes per future job in Postgres and batch-insert rate through
 * JobsRepository.insertBatch against a raw COPY of the same rows, in a database of its own.
 *
 *   npm run bench:storage -- [--rows 1000000] [--runs 3] [--insert-rows 200000] [--concurrency 1,2]
 *
 * Prints a short table on stderr and one JSON document on stdout.
 */
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { COLD_CLAIM_SQL, JobsRepository } from '../libs/persistence/src';
import { createBenchDatabase, type BenchDatabase } from './lib/bench-db';
import { copyJobs } from './lib/copy';
import { processCpuSeconds, selfCpuSeconds } from './lib/cpu';
import { batches, dataset, DAY_MS, type BenchRow, type DatasetOptions, type KeyMode } from './lib/dataset';
import { round, spread } from './lib/stats';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '3' },
    'insert-rows': { type: 'string', default: '200000' },
    'batch-size': { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '1,2' },
    tenants: { type: 'string', default: '10' },
    'payload-bytes': { type: 'string', default: '100' },
    skip: { type: 'string', default: '' },
    // Measure a candidate column type for jobs.payload (e.g. json) without a migration.
    'payload-type': { type: 'string', default: '' },
  },
});
const opt = {
  rows: Number(args.rows),
  runs: Number(args.runs),
  insertRows: Number(args['insert-rows']),
  batchSize: Number(args['batch-size']),
  concurrency: args.concurrency.split(',').map(Number),
  tenants: Number(args.tenants),
  payloadBytes: Number(args['payload-bytes']),
  skip: new Set(args.skip.split(',').filter(Boolean)),
  payloadType: args['payload-type'],
};

const START = new Date('2027-01-01T00:00:00Z');
const log = (msg: string) => process.stderr.write(`${msg}\n`);

function data(keys: KeyMode, rows: number, seed: number): DatasetOptions {
  return { rows, keys, tenants: opt.tenants, payloadBytes: opt.payloadBytes, spreadDays: 365, start: START, seed };
}

async function insertAll(repo: JobsRepository, rows: BenchRow[], concurrency: number): Promise<number> {
  const work = batches(rows, opt.batchSize);
  let next = 0;
  let created = 0;
  async function lane(): Promise<void> {
    while (next < work.length) {
      const b = work[next++];
      const out = await repo.insertBatch(b.tenantId, b.jobs);
      for (const o of out) if (o.status === 'created') created++;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  return created;
}

async function sizes(db: BenchDatabase): Promise<Record<string, number>> {
  const rows: { name: string; bytes: string }[] = await db.dataSource.query(`
    SELECT 'total' AS name, pg_total_relation_size('jobs') AS bytes
    UNION ALL SELECT 'heap', pg_relation_size('jobs')
    UNION ALL SELECT 'toast', coalesce(pg_total_relation_size(NULLIF(reltoastrelid, 0)), 0) FROM pg_class WHERE relname = 'jobs'
    UNION ALL SELECT 'fsm+vm', pg_relation_size('jobs', 'fsm') + pg_relation_size('jobs', 'vm')
    UNION ALL SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index WHERE indrelid = 'jobs'::regclass`);
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
}

async function storage(db: BenchDatabase, keys: KeyMode) {
  const repo = new JobsRepository(db.dataSource);
  await db.dataSource.query('TRUNCATE jobs');
  const rows = [...dataset(data(keys, opt.rows, keys === 'random' ? 1 : 2))];
  const t0 = performance.now();
  const created = await insertAll(repo, rows, Math.max(...opt.concurrency));
  const seconds = (performance.now() - t0) / 1000;
  if (created !== opt.rows) throw new Error(`expected ${opt.rows} rows, created ${created}`);
  await db.dataSource.query('VACUUM (ANALYZE) jobs'); // sets the visibility map as a live table would have
  const s = await sizes(db);
  const perJob = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, round(v / opt.rows, 1)]));
  // The promoter's claim must stay a range scan of jobs_cold_due at this size, unforced.
  const plan: { 'QUERY PLAN': string }[] = await db.dataSource.query(`EXPLAIN ${COLD_CLAIM_SQL}`, [new Date(START.getTime() + DAY_MS), 1000]);
  const promotionPlan = plan.map((r) => r['QUERY PLAN'].trim());
  log(`storage ${keys}: ${perJob.total} B/job (${opt.rows} rows loaded through insertBatch in ${round(seconds, 1)} s)`);
  return { keys, rows: opt.rows, bytesPerJob: perJob.total, breakdownBytesPerJob: perJob, totalBytes: s.total, loadSeconds: round(seconds, 2), promotionPlan };
}

/** CPU seconds used so far by each backend connected to the bench database, and by this process. */
async function cpuNow(db: BenchDatabase): Promise<{ backends: Map<number, number>; client: number }> {
  const rows: { pid: number }[] = await db.dataSource.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  return { backends: new Map(rows.map(({ pid }) => [pid, processCpuSeconds(pid) ?? Number.NaN])), client: selfCpuSeconds() };
}

/** Backend CPU between two snapshots; a backend that left in between (pool idle timeout) is not counted negative. */
function backendDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

async function throughput(db: BenchDatabase, concurrency: number) {
  const repo = new JobsRepository(db.dataSource);
  const rows = [...dataset(data('random', opt.insertRows, 3))];
  const repoRates: number[] = [];
  const copyRates: number[] = [];
  const ratios: number[] = [];
  const cpu = { repo: { backend: [] as number[], client: [] as number[] }, copy: { backend: [] as number[], client: [] as number[] } };
  const copyClient = new Client({ connectionString: db.url });
  await copyClient.connect();
  // Warm the pool so every connection's backend exists before the CPU snapshot.
  await Promise.all(Array.from({ length: concurrency }, () => db.dataSource.query('SELECT 1')));
  for (let run = 0; run < opt.runs; run++) {
    const rates: Record<'repo' | 'copy', number> = { repo: 0, copy: 0 };
    // Alternate which goes first so drift (checkpoints, cache) does not favour one side.
    for (const side of run % 2 ? (['copy', 'repo'] as const) : (['repo', 'copy'] as const)) {
      await db.dataSource.query('TRUNCATE jobs');
      await db.dataSource.query('CHECKPOINT');
      const c0 = await cpuNow(db);
      const t0 = performance.now();
      if (side === 'repo') {
        const created = await insertAll(repo, rows, concurrency);
        if (created !== rows.length) throw new Error(`insertBatch created ${created} of ${rows.length}`);
      } else {
        await copyJobs(copyClient, rows);
      }
      rates[side] = rows.length / ((performance.now() - t0) / 1000);
      const c1 = await cpuNow(db);
      cpu[side].backend.push(round((backendDelta(c0.backends, c1.backends) / rows.length) * 1e6, 1));
      cpu[side].client.push(round(((c1.client - c0.client) / rows.length) * 1e6, 1));
    }
    repoRates.push(round(rates.repo));
    copyRates.push(round(rates.copy));
    ratios.push(round(rates.repo / rates.copy, 3));
    log(`run ${run + 1} (${concurrency} conn): insertBatch ${round(rates.repo)} jobs/s, COPY ${round(rates.copy)} rows/s, ratio ${round(rates.repo / rates.copy, 2)}`);
  }
  await copyClient.end();
  const [{ load }] = [{ load: (await import('node:os')).loadavg()[0] }];
  return {
    rowsPerRun: rows.length,
    batchSize: opt.batchSize,
    concurrency,
    insertBatchJobsPerSecond: spread(repoRates),
    copyRowsPerSecond: spread(copyRates),
    ratio: spread(ratios),
    // CPU microseconds per row (Postgres backends, and this Node process). Unlike wall-clock
    // rates these barely move when other work shares the machine.
    cpuMicrosPerRow: {
      insertBatch: { postgres: spread(cpu.repo.backend), node: spread(cpu.repo.client) },
      copy: { postgres: spread(cpu.copy.backend), node: spread(cpu.copy.client) },
    },
    loadAverage1m: round(load, 2),
  };
}

async function main(): Promise<void> {
  const db = await createBenchDatabase('almanac_bench_storage', Math.max(...opt.concurrency) + 1);
  try {
    const [{ version }] = await db.dataSource.query('SELECT version()');
    if (opt.payloadType) {
      if (!/^[a-z]+$/.test(opt.payloadType)) throw new Error('--payload-type must be a plain type name');
      await db.dataSource.query(`ALTER TABLE jobs ALTER COLUMN payload TYPE ${opt.payloadType} USING payload::text::${opt.payloadType}`);
    }
    const [{ payloadType }] = await db.dataSource.query(
      `SELECT format_type(atttypid, atttypmod) AS "payloadType" FROM pg_attribute WHERE attrelid = 'jobs'::regclass AND attname = 'payload'`,
    );
    const result: Record<string, unknown> = {
      bench: 'storage',
      at: new Date().toISOString(),
      postgres: String(version).split(' ').slice(0, 2).join(' '),
      payloadColumnType: payloadType,
      options: { ...opt, skip: [...opt.skip] },
      targets: { bytesPerJob: 300, insertBatchJobsPerSecond: 100000 },
    };
    if (!opt.skip.has('throughput')) {
      const runs = [];
      for (const c of opt.concurrency) runs.push(await throughput(db, c));
      result.throughput = runs;
    }
    if (!opt.skip.has('storage')) result.storage = [await storage(db, 'random'), await storage(db, 'monotonic')];
    printTable(result);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await db.drop();
  }
}

function printTable(r: Record<string, unknown>): void {
  const ts = (r.throughput ?? []) as Awaited<ReturnType<typeof throughput>>[];
  const s = r.storage as Awaited<ReturnType<typeof storage>>[] | undefined;
  const lines = ['', '| figure | median | min | max | target |', '|---|---|---|---|---|'];
  for (const t of ts) {
    const f = (x: { median: number; min: number; max: number }) => `${x.median} | ${x.min} | ${x.max}`;
    lines.push(`| insertBatch jobs/s (batches of ${t.batchSize}, ${t.concurrency} conn) | ${f(t.insertBatchJobsPerSecond)} | ≥ 100000 |`);
    lines.push(`| COPY rows/s (same rows, same run, 1 conn) | ${f(t.copyRowsPerSecond)} | |`);
    lines.push(`| ratio insertBatch / COPY (${t.concurrency} conn) | ${f(t.ratio)} | |`);
    const c = t.cpuMicrosPerRow;
    lines.push(`| Postgres CPU µs/row insertBatch / COPY (${t.concurrency} conn) | ${c.insertBatch.postgres.median} / ${c.copy.postgres.median} | | | |`);
    lines.push(`| Node CPU µs/row insertBatch / COPY (${t.concurrency} conn) | ${c.insertBatch.node.median} / ${c.copy.node.median} | | | |`);
    lines.push(`| 1-min load average at the end (2 cores) | ${t.loadAverage1m} | | | |`);
  }
  for (const x of s ?? []) lines.push(`| bytes/job, ${x.keys} keys, ${x.rows} rows | ${x.bytesPerJob} | | | ≤ 300 |`);
  for (const x of s ?? []) lines.push(`| promotion claim plan, ${x.keys} keys | ${x.promotionPlan.filter((l) => /Scan/.test(l)).join('; ')} | | | jobs_cold_due |`);
  log(lines.join('\n'));
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
