/**
 * End-to-end execution throughput with full durability, against plain BullMQ in the same run.
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/throughput.ts [--jobs 50000] [--runs 3] [--workers 1,2,4] [--dispatchers 1] [--distinct]
 *
 * Each run: a fresh database and a private redis-server (never the shared one), N `noop` rows
 * inserted as queued and put on the hot queue while it is paused, then the real processes
 * (`node dist/apps/dispatcher/src/main.js` and K `node dist/apps/worker/src/main.js`) drain it:
 * hot queue, hand-off to the pool (ready list, or the backlog while the pool is full), claim as
 * the handler starts (queued → running), handler, completion (row → succeeded + one
 * job_attempts row). Timed from resume until every row is succeeded; then checked: exactly N
 * attempt rows, nothing run twice. The plain BullMQ figure is one process with a no-op
 * processor (concurrency 50, removeOnComplete) draining N jobs from the same redis-server.
 * CPU per job is summed over every process each system uses: the node roles, redis-server and,
 * for Almanac, every Postgres server process (the server is shared: run it quiet).
 *
 * Worker outages, backlogs, SIGKILLs and rolling restarts: bench/delivery-faults.ts.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { HotQueue } from '../libs/platform/src/queues/hot-queue';
import { BenchDatabase, createBenchDatabase } from './lib/bench-db';
import { postgresCpuSeconds } from './lib/cpu';
import { arg, cpuSeconds, freePort, median, PrivateRedis, ROOT, sleep, startRedis } from './lib/local';

export interface Role {
  name: string;
  child: ChildProcess;
  port: number;
}

/**
 * Starts `node dist/apps/<role>/src/main.js` and waits for /health/ready. `port`: a fixed one (a
 * restarted role keeps its address); `logFile`: its stdout and stderr appended there.
 */
export async function spawnRole(
  role: string, env: Record<string, string>, label = role, opts: { port?: number; logFile?: string } = {},
): Promise<Role> {
  const port = opts.port ?? (await freePort());
  const log = opts.logFile === undefined ? undefined : openSync(opts.logFile, 'a');
  const child = spawn(process.execPath, [...(process.env.BENCH_ROLE_NODE_ARGS ?? '').split(' ').filter(Boolean), join(ROOT, `dist/apps/${role}/src/main.js`)], {
    cwd: ROOT,
    env: { ...process.env, ALMANAC_LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: log === undefined ? ['ignore', 'ignore', 'pipe'] : ['ignore', log, log],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${label} exited: ${stderr}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${label} not ready after 30 s: ${stderr}`);
    await sleep(100);
  }
  return { name: label, child, port };
}

export async function stopRoles(roles: Role[]): Promise<void> {
  await Promise.all(
    roles.map(async (r) => {
      if (r.child.exitCode !== null) return;
      const exited = new Promise((res) => r.child.once('exit', res));
      r.child.kill('SIGTERM');
      const timer = setTimeout(() => r.child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** Queued `noop` rows due now, on the hot queue: what the API does for immediate jobs. */
export async function loadJobs(ds: DataSource, hot: HotQueue, n: number, runAt: (i: number) => Date, tag: string): Promise<void> {
  const BATCH = 5000;
  const now = new Date();
  for (let off = 0; off < n; off += BATCH) {
    const size = Math.min(BATCH, n - off);
    const idx = Array.from({ length: size }, (_, i) => off + i);
    const rows: { id: string; run_at: Date }[] = await ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1, k, 'noop', r, 'q' FROM unnest($1::text[], $2::timestamptz[]) AS t(k, r)
       RETURNING id::text AS id, run_at`,
      [idx.map((i) => `${tag}-${i}`), idx.map((i) => runAt(i))],
    );
    await hot.enqueue(rows.map((r) => ({ id: r.id, runAt: r.run_at, tenantId: 1, kind: 'noop' })), now);
  }
}

/** Transactions this database has committed or rolled back so far (pg_stat_database). */
async function transactions(ds: DataSource): Promise<number> {
  await ds.query('SELECT pg_stat_force_next_flush()');
  const [{ n }] = await ds.query(`SELECT (xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database WHERE datname = current_database()`);
  return n as number;
}

/** Any row still queued or running (two probes of the small partial indexes, no count). */
async function unfinished(ds: DataSource): Promise<boolean> {
  const [{ any }] = await ds.query(
    `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'q') OR EXISTS (SELECT 1 FROM jobs WHERE state = 'r') AS any`,
  );
  return any as boolean;
}


const DISTINCT = process.argv.includes('--distinct');

interface AlmanacRun {
  workers: number;
  seconds: number;
  perSecond: number;
  /** CPU microseconds per job in the dispatcher(s) and the workers (all processes summed). */
  dispatcherCpuUs: number;
  workerCpuUs: number;
  redisCpuUs: number;
  postgresCpuUs: number;
  /** Transactions committed in the bench database per job (batching: lower is better). */
  statementsPerJob: number;
}

async function almanacRun(db: BenchDatabase, redis: PrivateRedis, n: number, workers: number, dispatchers: number): Promise<AlmanacRun> {
  await db.dataSource.query('TRUNCATE jobs, job_attempts');
  const prefix = `bench-${randomBytes(3).toString('hex')}`;
  const hot = HotQueue.open(redis.connection, prefix);
  await hot.queue.pause();
  // --distinct: each job due at its own millisecond (all already due), so none shares an
  // envelope: the per-job path, as for work spread over time rather than a burst.
  const t0ms = Date.now();
  await loadJobs(db.dataSource, hot, n, DISTINCT ? (i) => new Date(t0ms - n + i) : () => new Date(t0ms), prefix);
  const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: prefix };
  const roles: Role[] = [];
  try {
    for (let i = 0; i < dispatchers; i++) roles.push(await spawnRole('dispatcher', env, `dispatcher-${i + 1}`));
    for (let i = 0; i < workers; i++) roles.push(await spawnRole('worker', env, `worker-${i + 1}`));
    const cpu0 = roles.map((r) => cpuSeconds(r.child.pid));
    const redis0 = cpuSeconds(redis.pid);
    const pg0 = postgresCpuSeconds();
    const tx0 = await transactions(db.dataSource);
    const t0 = process.hrtime.bigint();
    await hot.queue.resume();
    for (;;) {
      await sleep(100);
      // Cheap to ask (the queued and running partial indexes), so polling costs Postgres nothing
      // measurable; a count(*) of done rows every 100 ms was ~10 µs of its CPU per job.
      if (!(await unfinished(db.dataSource))) break;
      for (const r of roles) if (r.child.exitCode !== null) throw new Error(`${r.name} died`);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = roles.map((r, i) => cpuSeconds(r.child.pid) - cpu0[i]);
    const redisCpuUs = ((cpuSeconds(redis.pid) - redis0) / n) * 1e6;
    const postgresCpuUs = ((postgresCpuSeconds() - pg0) / n) * 1e6;
    const statementsPerJob = ((await transactions(db.dataSource)) - tx0) / n;
    const perJobUs = (pick: (r: Role) => boolean) => (cpu.filter((_, i) => pick(roles[i])).reduce((a, b) => a + b, 0) / n) * 1e6;
    const [{ attempts, jobs }] = await db.dataSource.query(
      `SELECT (SELECT count(*)::int FROM job_attempts WHERE outcome = 'succeeded') AS attempts,
              (SELECT count(*)::int FROM jobs WHERE state <> 'd' OR attempts <> 1) AS jobs`,
    );
    if (attempts !== n || jobs !== 0) throw new Error(`durability check failed: ${attempts} attempt rows, ${jobs} rows not done once`);
    return {
      workers, seconds, perSecond: n / seconds,
      dispatcherCpuUs: perJobUs((r) => r.name.startsWith('dispatcher')),
      workerCpuUs: perJobUs((r) => r.name.startsWith('worker')),
      redisCpuUs, postgresCpuUs, statementsPerJob,
    };
  } finally {
    await stopRoles(roles);
    await hot.queue.obliterate({ force: true }).catch(() => undefined);
    await hot.close();
  }
}

const PLAIN_WORKER = `
const { Worker } = require('bullmq');
const IORedis = require('ioredis');
const connection = new IORedis(process.env.REDIS_URL, { maxRetriesPerRequest: null });
const w = new Worker('plain', async () => undefined, { connection, prefix: process.env.PREFIX, concurrency: 50 });
process.on('SIGTERM', () => w.close().then(() => process.exit(0)));
`;

async function plainBullmqRun(redis: PrivateRedis, n: number): Promise<{ perSecond: number; cpuUs: number; redisCpuUs: number }> {
  const prefix = `plain-${randomBytes(3).toString('hex')}`;
  const q = new Queue('plain', { connection: redis.connection, prefix });
  await q.pause();
  for (let off = 0; off < n; off += 5000) {
    const size = Math.min(5000, n - off);
    await q.addBulk(Array.from({ length: size }, (_, i) => ({ name: 'noop', data: { t: 1, d: Date.now(), i: off + i }, opts: { removeOnComplete: true, removeOnFail: true } })));
  }
  const child = spawn(process.execPath, ['-e', PLAIN_WORKER], { cwd: ROOT, env: { ...process.env, REDIS_URL: redis.url, PREFIX: prefix }, stdio: 'ignore' });
  await sleep(1000); // connect
  const cpu0 = cpuSeconds(child.pid);
  const redis0 = cpuSeconds(redis.pid);
  const t0 = process.hrtime.bigint();
  await q.resume();
  for (;;) {
    await sleep(50);
    const c = await q.getJobCounts('waiting', 'active', 'wait');
    if (c.waiting + c.active + c.wait === 0) break;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpuUs = ((cpuSeconds(child.pid) - cpu0) / n) * 1e6;
  // The polling loop above adds a few Redis commands every 50 ms: noise against n jobs.
  const redisCpuUs = ((cpuSeconds(redis.pid) - redis0) / n) * 1e6;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await q.obliterate({ force: true }).catch(() => undefined);
  await q.close();
  return { perSecond: n / seconds, cpuUs, redisCpuUs };
}

async function main(): Promise<void> {
  const n = Number(arg('jobs', '50000'));
  const runs = Number(arg('runs', '3'));
  const workerCounts = arg('workers', '1,2,4').split(',').map(Number);
  const dispatchers = Number(arg('dispatchers', '1'));
  const db = await createBenchDatabase('almanac_bench_tp');
  const redis = await startRedis(Number(arg('hz', '10')));
  try {
    const plain: number[] = [];
    const almanac = new Map<number, number[]>();
    for (let r = 0; r < runs; r++) {
      const p = await plainBullmqRun(redis, n);
      plain.push(p.perSecond);
      console.log(
        `run ${r + 1}: plain BullMQ ${p.perSecond.toFixed(0)}/s (CPU/job: worker ${p.cpuUs.toFixed(0)} µs, redis ${p.redisCpuUs.toFixed(0)} µs, ` +
          `total ${(p.cpuUs + p.redisCpuUs).toFixed(0)} µs)`,
      );
      for (const k of workerCounts) {
        const res = await almanacRun(db, redis, n, k, dispatchers);
        almanac.set(k, [...(almanac.get(k) ?? []), res.perSecond]);
        console.log(
          `run ${r + 1}: almanac ${k} worker(s), ${dispatchers} dispatcher(s): ${res.perSecond.toFixed(0)}/s (${res.seconds.toFixed(1)} s for ${n}; ` +
            `CPU/job: dispatcher ${res.dispatcherCpuUs.toFixed(0)} µs, workers ${res.workerCpuUs.toFixed(0)} µs, ` +
            `redis ${res.redisCpuUs.toFixed(0)} µs, postgres ${res.postgresCpuUs.toFixed(0)} µs, ` +
            `total ${(res.dispatcherCpuUs + res.workerCpuUs + res.redisCpuUs + res.postgresCpuUs).toFixed(0)} µs; ` +
            `${res.statementsPerJob.toFixed(3)} transactions/job)`,
        );
      }
    }
    const p = median(plain);
    console.log(`\nmedians over ${runs} runs, ${n} noop jobs each:`);
    console.log(`  plain BullMQ (1 process, concurrency 50, no durable record): ${p.toFixed(0)}/s`);
    for (const [k, xs] of almanac) {
      const m = median(xs);
      console.log(`  almanac, ${k} worker process(es): ${m.toFixed(0)}/s  (${((m / p) * 100).toFixed(0)}% of plain BullMQ; runs ${xs.map((x) => x.toFixed(0)).join(', ')})`);
    }
  } finally {
    await redis.stop();
    await db.drop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
