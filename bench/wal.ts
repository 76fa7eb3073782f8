/**
 * What one job costs the Postgres primary, stage by stage (issue 17 item 5, docs/scaling.md):
 * WAL bytes and backend CPU per job for ingest, promotion, the claim and the completion.
 *
 *   node -r ./bench/lib/register.cjs bench/wal.ts [--runs 3] [--jobs 100000] [--payload-bytes 200] [--checkpoints 0]
 *
 * In-process, on a fresh database (`ALMANAC_BENCH_PG_URL`) and a private redis-server, through the
 * production code on one pooled connection (so one backend does all the work and its CPU is read
 * from /proc/<pid>/stat, utime + stime): `JobsRepository.insertBatch` in batches of 1,000 (cold rows
 * due in two days, a `noop` payload of about `--payload-bytes`), `PromotionSweep.runOnce` (batches of
 * 5,000 and their addBulk), `ExecutionRepository.claimForRun` in batches of 500 (the worker's claim),
 * and `complete` in batches of 500 (the group commit: one UPDATE plus one INSERT of attempt rows).
 * WAL from `pg_current_wal_lsn()` before and after each stage, with a CHECKPOINT before each but
 * the completion (so pages pay their full-page image once per stage, as hours apart they would;
 * `--checkpoints 0` leaves them out: the WAL without full-page images) (the database is the bench's own; the
 * server's other databases may add WAL meanwhile: run on a quiet server). Prints JSON (stdout) and
 * a table (stderr).
 */
import { ExecutionRepository, JobsRepository, SweepsRepository, TenantsRepository } from '@almanac/persistence';
import { HotQueue } from '@almanac/platform';
import { readFileSync } from 'node:fs';
import { PromotionSweep } from '../apps/promoter/src/sweeps/promotion.sweep';
import { startPrivateRedis } from '../test/support/private-redis';
import { createBenchDatabase, walPosition } from './lib/bench-db';
import { arg } from './lib/local';
import { round, spread } from './lib/stats';

const opts = { runs: Number(arg('runs', '3')), jobs: Number(arg('jobs', '100000')), payloadBytes: Number(arg('payload-bytes', '200')), checkpoints: arg('checkpoints', '1') !== '0' };
const HOUR = 3600e3;
const STAGES = ['ingest', 'promote', 'claim', 'complete'] as const;
type Stage = (typeof STAGES)[number];
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} wal: ${m}\n`);
const TICKS_PER_SECOND = 100; // Linux USER_HZ


/** CPU seconds the backend has used (utime + stime). */
function backendCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

type StageFigures = Record<Stage, { walBytesPerJob: number; cpuMicrosPerJob: number; seconds: number }>;

async function run(i: number): Promise<StageFigures & { bytes: { jobsPerJob: number; attemptsPerJob: number } }> {
  const db = await createBenchDatabase('almanac_bench_wal', 1);
  const redis = await startPrivateRedis();
  const queue = HotQueue.open(redis.connection, 'bench', 10_000);
  try {
    const ds = db.dataSource;
    const [{ pid }] = await ds.query<{ pid: number }[]>(`SELECT pg_backend_pid() AS pid`);
    const tenantId = (await new TenantsRepository(ds).create('wal')).tenant.id;
    const jobs = new JobsRepository(ds);
    const exec = new ExecutionRepository(ds);
    const promotion = new PromotionSweep(new SweepsRepository(ds), queue, { hotHorizonMs: 24 * HOUR, batchSize: 5000, maxPerRun: 10_000_000, concurrency: 1 });
    const payload = { text: 'x'.repeat(Math.max(0, opts.payloadBytes - 11)) };
    const start = Date.now();
    const due = new Date(start + 48 * HOUR);
    let ids: string[] = [];
    const out = {} as Record<Stage, { walBytesPerJob: number; cpuMicrosPerJob: number; seconds: number }>;
    // A checkpoint before ingest, promotion and the claim, which come hours apart in real life (a
    // page's first change after a checkpoint is logged whole: full_page_writes); none before the
    // completion, which follows its claim within seconds.
    const stage = async (name: Stage, work: () => Promise<void>) => {
      if (opts.checkpoints && name !== 'complete') await ds.query('CHECKPOINT');
      const [w0, c0, t0] = [await walPosition(ds), backendCpu(pid), performance.now()];
      await work();
      const [w1, c1, t1] = [await walPosition(ds), backendCpu(pid), performance.now()];
      out[name] = { walBytesPerJob: round(Number(w1 - w0) / opts.jobs), cpuMicrosPerJob: round(((c1 - c0) * 1e6) / opts.jobs), seconds: round((t1 - t0) / 1000, 2) };
      log(`run ${i}: ${name}: ${out[name].walBytesPerJob} B WAL, ${out[name].cpuMicrosPerJob} µs backend CPU per job (${out[name].seconds} s)`);
    };
    await stage('ingest', async () => {
      for (let n = 0; n < opts.jobs; n += 1000) {
        const batch = Array.from({ length: Math.min(1000, opts.jobs - n) }, (_, k) => ({ kind: 'noop', key: `wal:${n + k}`, runAt: due, payload, state: 'scheduled' as const }));
        const res = await jobs.insertBatch(tenantId, batch);
        ids.push(...res.map((r) => (r.status === 'retired' ? '' : r.job.id)).filter(Boolean));
      }
    });
    // The promotion horizon reaches the rows: "now" is a day later.
    await stage('promote', async () => {
      await promotion.runOnce(new Date(start + 25 * HOUR));
    });
    const runNow = new Date(due.getTime() + 1000);
    const leaseMs = 30_000;
    const claimed: { id: string; attempt: number }[] = [];
    await stage('claim', async () => {
      for (let n = 0; n < ids.length; n += 500) {
        const { claimed: rows } = await exec.claim(ids.slice(n, n + 500), runNow, new Date(runNow.getTime() + leaseMs), 1);
        claimed.push(...rows.map((r) => ({ id: r.id, attempt: r.attempt })));
      }
    });
    await stage('complete', async () => {
      for (let n = 0; n < claimed.length; n += 500) {
        await exec.complete(
          claimed.slice(n, n + 500).map((c) => ({ id: c.id, attempt: c.attempt, tenantId, next: 'succeeded', outcome: 'succeeded', startedAt: runNow, finishedAt: runNow, workerId: 'bench' })),
          runNow,
        );
      }
    });
    ids = [];
    const [{ n }] = await ds.query<{ n: string }[]>(`SELECT count(*) AS n FROM jobs WHERE state = 'd'`);
    if (Number(n) !== opts.jobs) throw new Error(`expected ${opts.jobs} succeeded rows, found ${n}`);
    // What a finished job keeps on disk, with every index (the dead versions vacuumed first).
    await ds.query('VACUUM jobs, job_attempts');
    const [size] = await ds.query<{ jobs: string; attempts: string }[]>(`SELECT pg_total_relation_size('jobs') AS jobs, pg_total_relation_size('job_attempts') AS attempts`);
    const bytes = { jobsPerJob: round(Number(size.jobs) / opts.jobs), attemptsPerJob: round(Number(size.attempts) / opts.jobs) };
    log(`run ${i}: on disk per finished job: jobs ${bytes.jobsPerJob} B, job_attempts ${bytes.attemptsPerJob} B`);
    return { ...out, bytes };
  } finally {
    await queue.close();
    await redis.stop();
    await db.drop();
  }
}

async function main() {
  log(`${opts.runs} run(s) of ${opts.jobs.toLocaleString('en')} jobs, payload ~${opts.payloadBytes} B`);
  const runs: Awaited<ReturnType<typeof run>>[] = [];
  for (let i = 1; i <= opts.runs; i++) runs.push(await run(i));
  const summary = Object.fromEntries(
    STAGES.map((s) => [s, { walBytesPerJob: spread(runs.map((r) => r[s].walBytesPerJob)), cpuMicrosPerJob: spread(runs.map((r) => r[s].cpuMicrosPerJob)) }]),
  ) as Record<Stage, { walBytesPerJob: ReturnType<typeof spread>; cpuMicrosPerJob: ReturnType<typeof spread> }>;
  const onDisk = { jobsPerJob: spread(runs.map((r) => r.bytes.jobsPerJob)), attemptsPerJob: spread(runs.map((r) => r.bytes.attemptsPerJob)) };
  const total = { walBytesPerJob: STAGES.reduce((t, s) => t + summary[s].walBytesPerJob.median, 0), cpuMicrosPerJob: STAGES.reduce((t, s) => t + summary[s].cpuMicrosPerJob.median, 0) };
  process.stderr.write(
    `\n| stage (median of ${opts.runs}, ${opts.jobs.toLocaleString('en')} jobs) | WAL B/job | backend CPU µs/job |\n|---|---|---|\n` +
      STAGES.map((s) => `| ${s} | ${summary[s].walBytesPerJob.median} (${summary[s].walBytesPerJob.min}–${summary[s].walBytesPerJob.max}) | ${summary[s].cpuMicrosPerJob.median} (${summary[s].cpuMicrosPerJob.min}–${summary[s].cpuMicrosPerJob.max}) |`).join('\n') +
      `\n| a job's life | ${total.walBytesPerJob} | ${total.cpuMicrosPerJob} |\n` +
      `\non disk per finished job: jobs ${onDisk.jobsPerJob.median} B, job_attempts ${onDisk.attemptsPerJob.median} B\n`,
  );
  process.stdout.write(`${JSON.stringify({ bench: 'wal', at: new Date().toISOString(), inputs: opts, summary, total, onDisk, runs })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
