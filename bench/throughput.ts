/**
 * End-to-end execution throughput with full durability, against plain BullMQ in the same run.
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/throughput.ts [--jobs 50000] [--runs 3] [--workers 1,2,4] [--dispatchers 1] [--distinct]
 *        [--hz 10] [--warmup 5000] [--root <checkout>]
 *
 * `--root` (default: this checkout) is the code under test, for an A/B against another commit
 * (`git worktree add /tmp/almanac-old <commit>`, then `npm ci && npm run build` there): its
 * dist/ runs the roles, its `scripts/migrate.js` migrates the bench database, and its built
 * HotQueue (dist/libs/platform/src/queues/hot-queue.js) puts the rows on the hot queue, so the
 * schema and the queue format are the ones that code expects. Nothing is built here: build the
 * checkout first (`npm run bench -- throughput` builds this one when dist/ is stale). The hints
 * carry the due time both ways (`runAt` for the old road, `dueMs` for delivery v3).
 *
 * Each run: a fresh database and a private redis-server (never the shared one), N `noop` rows
 * inserted as queued and put on the hot queue while it is paused, then the real processes
 * (`node dist/apps/dispatcher/src/main.js` and K `node dist/apps/worker/src/main.js`) drain it:
 * hot queue, hand-off to the pool's ready lists, the worker's take, the claim at the due time
 * (queued → running), handler, completion (row → succeeded + one job_attempts row). Timed from resume until every row is succeeded; then checked: exactly N
 * attempt rows, nothing run twice. The plain BullMQ figure is one process with a no-op
 * processor (concurrency 50, removeOnComplete) draining N jobs from the same redis-server.
 * Both systems first drain --warmup jobs per worker process (5,000; 0 for none; Almanac's workers share
 * --warmup × workers as their takes fall), not measured, so the figure is a
 * burst meeting processes that have run before (their JIT, connections, Lua scripts loaded),
 * as in a running installation: cold, one Almanac worker's first 2,000 jobs ran at half its
 * later rate.
 * CPU per job is summed over every process each system uses: the node roles, redis-server and,
 * for Almanac, every Postgres server process (the server is shared: run it quiet).
 *
 * Worker outages, backlogs, SIGKILLs and rolling restarts: bench/delivery-faults.ts.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { checkoutInfo } from './lib/bench-tenants';
import { type BenchDb, migratedDatabase } from './lib/cluster-process';
import { postgresCpuSeconds } from './lib/cpu';
import { arg, cpuSeconds, freePort, median, PrivateRedis, ROOT, sleep, startRedis } from './lib/local';

export interface Role {
  name: string;
  child: ChildProcess;
  port: number;
}

/**
 * Starts `node dist/apps/<role>/src/main.js` and waits for /health/ready. `port`: a fixed one (a
 * restarted role keeps its address); `logFile`: its stdout and stderr appended there; `root`:
 * the checkout whose dist/ runs (default this one).
 */
export async function spawnRole(
  role: string, env: Record<string, string>, label = role, opts: { port?: number; logFile?: string; root?: string; prefix?: string[] } = {},
): Promise<Role> {
  const root = opts.root ?? ROOT;
  const entry = join(root, `dist/apps/${role}/src/main.js`);
  if (!existsSync(entry)) throw new Error(`${entry} is missing: build that checkout first (npm run build)`);
  const port = opts.port ?? (await freePort());
  // BENCH_ROLE_LOG_DIR=<dir> keeps each role's log there (a run that went wrong, a probe).
  const logFile = opts.logFile ?? (process.env.BENCH_ROLE_LOG_DIR ? join(process.env.BENCH_ROLE_LOG_DIR, `${label}-${port}.log`) : undefined);
  const log = logFile === undefined ? undefined : openSync(logFile, 'a');
  // `prefix`: a command the role runs under (bench/chaos.ts' DNS jail), which must exec node in the same process.
  const command = [...(opts.prefix ?? []), process.execPath, ...(process.env.BENCH_ROLE_NODE_ARGS ?? '').split(' ').filter(Boolean), entry];
  const child = spawn(command[0], command.slice(1), {
    cwd: root,
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

/** Runs SQL and answers the rows: a TypeORM DataSource (lag.ts, delivery-faults.ts) or a BenchDb. */
export interface Sql {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * A hint as both roads read it: the old hot queue (HotItem) reads `runAt`, delivery v3's (Hint)
 * reads `dueMs`; each ignores the other field.
 */
export interface BenchHint {
  id: string;
  tenantId: number;
  kind: string;
  runAt: Date;
  dueMs: number;
}

/** What the benches use of a checkout's HotQueue (libs/platform/src/queues/hot-queue.ts). */
export interface BenchHotQueue {
  readonly queue: Pick<Queue, 'pause' | 'resume' | 'obliterate'>;
  enqueue(items: readonly BenchHint[], now: Date): Promise<void>;
  close(): Promise<void>;
}

/**
 * The HotQueue class of `root`'s build (dist/libs/platform/src/queues/hot-queue.js), so the rows
 * go on the hot queue in the format that checkout's dispatcher reads. `HotQueue.open(connection,
 * prefix)` exists on both roads.
 */
export function hotQueueOf(root: string): { open(connection: IORedis, prefix: string): BenchHotQueue } {
  const file = join(root, 'dist/libs/platform/src/queues/hot-queue.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: build that checkout first (npm run build)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the build under test, chosen at run time
  const mod = require(file) as { HotQueue?: { open(connection: IORedis, prefix: string): BenchHotQueue } };
  if (typeof mod.HotQueue?.open !== 'function') throw new Error(`${file} exports no HotQueue.open`);
  return mod.HotQueue;
}

/** Queued `noop` rows due now, on the hot queue: what the API does for immediate jobs. */
export async function loadJobs(ds: Sql, hot: Pick<BenchHotQueue, 'enqueue'>, n: number, runAt: (i: number) => Date, tag: string): Promise<void> {
  const BATCH = 5000;
  const now = new Date();
  for (let off = 0; off < n; off += BATCH) {
    const size = Math.min(BATCH, n - off);
    const idx = Array.from({ length: size }, (_, i) => off + i);
    const rows = (await ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state)
       SELECT 1, k, 'noop', r, 'q' FROM unnest($1::text[], $2::timestamptz[]) AS t(k, r)
       RETURNING id::text AS id, run_at`,
      [idx.map((i) => `${tag}-${i}`), idx.map((i) => runAt(i))],
    )) as { id: string; run_at: Date }[];
    await hot.enqueue(rows.map((r) => ({ id: r.id, runAt: r.run_at, dueMs: r.run_at.getTime(), tenantId: 1, kind: 'noop' })), now);
  }
}

/** Newest modification time of a non-spec .ts file under `dir` (0 when none). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

/** Transactions this database has committed or rolled back so far (pg_stat_database). */
async function transactions(ds: Sql): Promise<number> {
  await ds.query('SELECT pg_stat_force_next_flush()');
  const [{ n }] = (await ds.query(`SELECT (xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database WHERE datname = current_database()`)) as { n: number }[];
  return n;
}

/** Any row still queued or running (two probes of the small partial indexes, no count). */
async function unfinished(ds: Sql): Promise<boolean> {
  const [{ any }] = (await ds.query(
    `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'q') OR EXISTS (SELECT 1 FROM jobs WHERE state = 'r') AS any`,
  )) as { any: boolean }[];
  return any;
}


const DISTINCT = process.argv.includes('--distinct');
/** The code under test: its dist/ roles, migrations and HotQueue (see the header). */
const CODE_ROOT = resolve(arg('root', ROOT));

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
  /** From the resume: when the first handler started, and the last finished (the rest is polling and the final commit). */
  timeline: { firstStartMs: number; lastFinishMs: number };
}

/**
 * Both systems are polled for the end of the drain at this interval: the last poll's wait is
 * part of the time measured (half of it on average), so it must be the same on both sides.
 */
const POLL_MS = 25;
const WARMUP = Number(arg('warmup', '5000'));

async function almanacRun(db: BenchDb, redis: PrivateRedis, n: number, workers: number, dispatchers: number): Promise<AlmanacRun> {
  await db.query('TRUNCATE jobs, job_attempts');
  const prefix = `bench-${randomBytes(3).toString('hex')}`;
  const hot = hotQueueOf(CODE_ROOT).open(redis.connection, prefix);
  await hot.queue.pause();
  // --distinct: each job due at its own millisecond (all already due), so none shares an
  // envelope: the per-job path, as for work spread over time rather than a burst.
  const t0ms = Date.now();
  if (WARMUP === 0) await loadJobs(db, hot, n, DISTINCT ? (i) => new Date(t0ms - n + i) : () => new Date(t0ms), prefix);
  const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: prefix };
  const roles: Role[] = [];
  try {
    for (let i = 0; i < dispatchers; i++) roles.push(await spawnRole('dispatcher', env, `dispatcher-${i + 1}`, { root: CODE_ROOT }));
    for (let i = 0; i < workers; i++) roles.push(await spawnRole('worker', env, `worker-${i + 1}`, { root: CODE_ROOT }));
    if (WARMUP > 0) {
      await hot.queue.resume();
      // --warmup jobs per worker process, as plain BullMQ's one process gets: 4 workers sharing
      // 5,000 ran 20,000 jobs at 13,628 / 14,988 jobs/s (workers 69 / 63 µs a job), with 5,000
      // each at 18,542 / 17,617 (45 / 48 µs), plain BullMQ 15,793 / 14,897 alongside (2026-12-06).
      await loadJobs(db, hot, WARMUP * workers, () => new Date(), `${prefix}-warm`);
      while (await unfinished(db)) await sleep(POLL_MS);
      await hot.queue.pause();
      await db.query('TRUNCATE jobs, job_attempts');
      await loadJobs(db, hot, n, DISTINCT ? (i) => new Date(Date.now() - n + i) : () => new Date(), prefix);
    }
    const cpu0 = roles.map((r) => cpuSeconds(r.child.pid));
    const redis0 = cpuSeconds(redis.pid);
    const pg0 = postgresCpuSeconds();
    const tx0 = await transactions(db);
    const t0 = process.hrtime.bigint();
    const resumedAtMs = Date.now();
    await hot.queue.resume();
    for (;;) {
      await sleep(POLL_MS);
      // Cheap to ask (the queued and running partial indexes), so polling costs Postgres nothing
      // measurable; a count(*) of done rows every 100 ms was ~10 µs of its CPU per job.
      if (!(await unfinished(db))) break;
      for (const r of roles) if (r.child.exitCode !== null) throw new Error(`${r.name} died`);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = roles.map((r, i) => cpuSeconds(r.child.pid) - cpu0[i]);
    const redisCpuUs = ((cpuSeconds(redis.pid) - redis0) / n) * 1e6;
    const postgresCpuUs = ((postgresCpuSeconds() - pg0) / n) * 1e6;
    const statementsPerJob = ((await transactions(db)) - tx0) / n;
    const perJobUs = (pick: (r: Role) => boolean) => (cpu.filter((_, i) => pick(roles[i])).reduce((a, b) => a + b, 0) / n) * 1e6;
    const [{ attempts, jobs }] = await db.query<{ attempts: number; jobs: number }>(
      `SELECT (SELECT count(*)::int FROM job_attempts WHERE outcome = 'succeeded') AS attempts,
              (SELECT count(*)::int FROM jobs WHERE state <> 'd' OR attempts <> 1) AS jobs`,
    );
    if (attempts !== n || jobs !== 0) throw new Error(`durability check failed: ${attempts} attempt rows, ${jobs} rows not done once`);
    // Where the wall time went: before the first handler started, and after the last one finished.
    const [span] = await db.query<{ first: number; last: number }>(
      `SELECT extract(epoch FROM min(started_at)) * 1000 AS first, extract(epoch FROM max(finished_at)) * 1000 AS last FROM job_attempts`,
    );
    const timeline = { firstStartMs: Number(span.first) - resumedAtMs, lastFinishMs: Number(span.last) - resumedAtMs };
    return {
      workers, seconds, perSecond: n / seconds,
      dispatcherCpuUs: perJobUs((r) => r.name.startsWith('dispatcher')),
      workerCpuUs: perJobUs((r) => r.name.startsWith('worker')),
      redisCpuUs, postgresCpuUs, statementsPerJob, timeline,
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
  const add = async (count: number) => {
    for (let off = 0; off < count; off += 5000) {
      const size = Math.min(5000, count - off);
      await q.addBulk(Array.from({ length: size }, (_, i) => ({ name: 'noop', data: { t: 1, d: Date.now(), i: off + i }, opts: { removeOnComplete: true, removeOnFail: true } })));
    }
  };
  const drained = async () => {
    const c = await q.getJobCounts('waiting', 'active', 'wait');
    return c.waiting + c.active + c.wait === 0;
  };
  const child = spawn(process.execPath, ['-e', PLAIN_WORKER], { cwd: ROOT, env: { ...process.env, REDIS_URL: redis.url, PREFIX: prefix }, stdio: 'ignore' });
  await sleep(1000); // connect
  await add(WARMUP);
  while (!(await drained())) await sleep(POLL_MS);
  await q.pause();
  await add(n);
  const cpu0 = cpuSeconds(child.pid);
  const redis0 = cpuSeconds(redis.pid);
  const t0 = process.hrtime.bigint();
  await q.resume();
  do await sleep(POLL_MS);
  while (!(await drained()));
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
  const code = checkoutInfo(CODE_ROOT);
  // Parsed by nothing, kept in bench/run.ts's raw output: which code the Almanac lines measured.
  // The roles run from dist/, which may be older than the commit's sources: its build time says which.
  const built = statSync(join(CODE_ROOT, 'dist/apps/worker/src/main.js'), { throwIfNoEntry: false })?.mtimeMs;
  const stale = built !== undefined && Math.max(newestSource(join(CODE_ROOT, 'apps')), newestSource(join(CODE_ROOT, 'libs'))) > built;
  console.log(`code under test: ${CODE_ROOT} (${code.commit}${code.dirty ? ', uncommitted changes in apps/ or libs/' : ''}; ` +
    `dist/ built ${built === undefined ? 'never' : `${new Date(built).toISOString().slice(0, 16)} UTC`}${stale ? ', OLDER than its sources: the commit named is not what runs' : ''})`);
  const db = await migratedDatabase('almanac_bench_tp', CODE_ROOT);
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
            `${res.statementsPerJob.toFixed(3)} transactions/job; first start +${res.timeline.firstStartMs.toFixed(0)} ms, last finish +${res.timeline.lastFinishMs.toFixed(0)} ms)`,
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
