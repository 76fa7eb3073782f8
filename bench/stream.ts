/**
 * Jobs at distinct instants at a steady rate (issue 31 item 7), Almanac through `npm run cluster`
 * against plain BullMQ in the same run, on the same machine, on a ladder of rates.
 *
 *   node -r ./bench/lib/register.cjs bench/stream.ts [--rates 500,1500,3000,6000,9000,12000,15000,18000,21000] [--seconds 20]
 *        [--runs 3] [--workers 1] [--hz 10] [--connections 4] [--give-up-seconds 120] [--root <checkout>] [--verbose]
 *   node -r ./bench/lib/register.cjs bench/stream.ts --rates 500,1500 --seconds 5 --runs 1   # smoke test, ~1 min
 *   npm run bench -- stream [--root <checkout>]       # the same through bench/run.ts, into REPORT.md
 *
 * Duration: about 40 minutes at the defaults on this 2-core machine (3 runs × 9 rates × two
 * systems; a measurement takes its --seconds plus ~5-15 s of setup, loading and teardown for
 * plain BullMQ, ~15-25 s for Almanac; a stream that falls behind adds its drain: 2,392 s on an
 * AMD EPYC, 2026-12-06, both falling behind from 15,000-18,000/s). Bounded: a measurement gives up
 * --give-up-seconds (120) after its last job was due (recorded as failed: not every job ran),
 * and a system's ladder stops for the rest of a run after two rates in a row missed p99 ≤ 1 s.
 *
 * A measurement is one system at one rate R for --seconds S: N = R × S `noop` jobs, job i due
 * at T0 + i / R s (rounded to the millisecond, so above 1,000/s a few jobs share a millisecond;
 * none shares a due time with many). Every job is queued ahead of T0 (the load ends at least
 * ~3 s before it), so nothing but the stream runs from T0 on. Each measurement has a fresh
 * private redis-server (`--hz`, Redis' default 10) and, for Almanac, a fresh database.
 *
 * - plain BullMQ: a child process runs a BullMQ Worker (concurrency 50, no-op processor, like
 *   bench/throughput.ts) that records lag = Date.now() − job.data.d (d = the due time, epoch ms)
 *   as the processor starts, and prints its percentiles when it gets SIGTERM. The producer adds
 *   the N jobs as delayed jobs with addBulk (delay = due − now, removeOnComplete/removeOnFail).
 * - Almanac: `node <root>/scripts/cluster.js --workers W` (bench/lib/cluster-process.ts: api,
 *   promoter, dispatcher and W workers as separate processes from <root>/dist/; cluster.js
 *   builds <root> first when its dist/ is older than its sources) on an empty database it
 *   migrates with its own migrations. One tenant made through the admin API; the N jobs POSTed
 *   through /v1/jobs/batch (1,000 per request, --connections at once). Lag is read from the
 *   durable record: job_attempts.started_at − jobs.run_at over the succeeded attempts, and the
 *   record is checked: one attempt row per job, every job succeeded once.
 *
 * Both systems first run a warm-up of min(5,000, N) jobs due 1 s ahead, not measured (the
 * processes' JIT, connections; for Almanac it also measures the ingest rate that sets T0).
 * Lag percentiles are linear between ranks (percentile_cont) on both sides.
 *
 * CPU per job: CPU seconds over [T0, the moment every job was seen done] (sampled at T0 and at
 * the end, polling every 250 ms) divided by N. Plain BullMQ: the worker process + redis-server.
 * Almanac: every role process (api, promoter, dispatcher, workers), redis-server, and every
 * process of the local Postgres server (shared with anything else on the machine: keep it quiet).
 * Beside it, the cores the same processes keep busy while nothing is due (from the load's end
 * + 0.5 s to T0): the part of CPU per job that is a fixed background cost, not work per job.
 *
 * Runs interleave the systems: for each run, for each rate (ascending), BullMQ then Almanac.
 * Printed: one line per measurement and, at the end, a table of medians over the runs (min–max),
 * then one JSON document, the last line of stdout. In it, per system and rate, p50/p90/p99/max
 * lag and CPU µs per job (median, min, max and every run; a failed or skipped run counts as
 * Infinity, written as null), and `highestRateP99Under1s`: per system the highest rate of the
 * ladder whose median p99 is ≤ 1,000 ms and at which every run ran every job, and the ratio
 * Almanac / BullMQ (a bound, not a value, when a system passes at the top of the ladder).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Queue } from 'bullmq';
import { type BenchTenant, checkoutInfo, createBenchTenant, type JobBody, postInBatches } from './lib/bench-tenants';
import { type BenchDb, ClusterProcess, emptyDatabase } from './lib/cluster-process';
import { postgresCpuSeconds } from './lib/cpu';
import { arg, cpuSeconds, ROOT, sleep, startRedis, type PrivateRedis } from './lib/local';

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} stream: ${msg}\n`);
const ADMIN = 'stream-admin-token-0123456789abcdef';
/** Warm-up jobs per measurement (at most N). */
const WARM_JOBS = 5000;
const POLL_MS = 250;
/** The target the ladder is about: lag p99 ≤ 1 s. */
const P99_LIMIT_MS = 1000;

const opts = {
  rates: arg('rates', '500,1500,3000,6000,9000,12000,15000,18000,21000').split(',').map(Number).filter((r) => r > 0).sort((a, b) => a - b),
  seconds: Number(arg('seconds', '20')),
  runs: Number(arg('runs', '3')),
  workers: Number(arg('workers', '1')),
  hz: Number(arg('hz', '10')),
  connections: Number(arg('connections', '4')),
  root: resolve(arg('root', ROOT)),
  /** A measurement gives up this long after its last job was due. */
  giveUpMs: Number(arg('give-up-seconds', '120')) * 1000,
  verbose: process.argv.includes('--verbose'),
};

type System = 'bullmq' | 'almanac';
const SYSTEM_NAME: Record<System, string> = { bullmq: 'plain BullMQ', almanac: 'Almanac' };

interface Lag { p50: number; p90: number; p99: number; max: number }
const NO_LAG: Lag = { p50: Infinity, p90: Infinity, p99: Infinity, max: Infinity };

interface Measurement {
  run: number;
  rate: number;
  system: System;
  /** ok: every job ran by the deadline; failed: not every job ran, or the measurement broke; skipped: the ladder had stopped. */
  status: 'ok' | 'failed' | 'skipped';
  jobs: number;
  /** Jobs that ran (BullMQ: processor calls, first per job; Almanac: rows succeeded once). */
  ran: number;
  /** BullMQ: a job's processor called again; Almanac: attempt rows beyond one per job. */
  ranTwice: number;
  /** Infinity when the measurement failed or was skipped (see partialLagMs). */
  lagMs: Lag;
  /** A failed measurement's lag over the jobs that did run. */
  partialLagMs?: Lag;
  cpuUsPerJob: number;
  /** CPU µs per job by process (group). */
  cpu: Record<string, number>;
  /** Cores busy by process (group) while nothing was due, just before T0 (see idleCores). */
  idleCores: Record<string, number>;
  windowSeconds: number;
  loadSeconds: number;
  /** How long before T0 the load ended (negative: jobs were still being added at T0). */
  loadEndBeforeT0Ms: number;
  error?: string;
}

const dueOf = (t0: number, rate: number) => (i: number) => Math.round(t0 + (i * 1000) / rate);
const r1 = (v: number) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : v);
const roundLag = (l: Lag): Lag => ({ p50: r1(l.p50), p90: r1(l.p90), p99: r1(l.p99), max: r1(l.max) });

function skipped(run: number, rate: number, system: System): Measurement {
  return {
    run, rate, system, status: 'skipped', jobs: rate * opts.seconds, ran: 0, ranTwice: 0, lagMs: NO_LAG,
    cpuUsPerJob: NaN, cpu: {}, idleCores: {}, windowSeconds: NaN, loadSeconds: NaN, loadEndBeforeT0Ms: NaN,
  };
}

function failed(run: number, rate: number, system: System, err: unknown): Measurement {
  return { ...skipped(run, rate, system), status: 'failed', error: err instanceof Error ? err.message : String(err) };
}

/** Sleeps until the epoch-ms instant `at` (no-op when it has passed). */
const until = (at: number) => sleep(Math.max(0, at - Date.now()));

/** CPU seconds so far by process group; several processes (the workers) add up in one group. */
type CpuReading = { at: number; seconds: Record<string, number> };
function readCpu(sources: [string, () => number][]): CpuReading {
  const seconds: Record<string, number> = {};
  for (const [group, read] of sources) seconds[group] = (seconds[group] ?? 0) + read();
  return { at: Date.now(), seconds };
}

/**
 * The CPU readings of one measurement: idle (load end + 500 ms → T0) and the stream (T0 → every
 * job done, polled every POLL_MS from the last due time; given up `opts.giveUpMs` after it, or
 * when `alive` says the system under test is gone).
 */
async function drainWindow(
  sources: [string, () => number][], loadEnd: number, t0: number, lastDue: number, isDone: () => Promise<boolean>, alive: () => boolean,
): Promise<{ idle: CpuReading; start: CpuReading; end: CpuReading; done: boolean }> {
  await until(loadEnd + 500);
  const idle = readCpu(sources);
  await until(t0);
  const start = readCpu(sources);
  await until(lastDue);
  let done = false;
  for (;;) {
    if (await isDone()) {
      done = true;
      break;
    }
    if (!alive() || Date.now() > lastDue + opts.giveUpMs) break;
    await sleep(POLL_MS);
  }
  return { idle, start, end: readCpu(sources), done };
}
/** Per group: CPU used between two readings, scaled by `f`. */
function cpuBetween(a: CpuReading, b: CpuReading, f: (s: number) => number): Record<string, number> {
  return Object.fromEntries(Object.keys(b.seconds).map((k) => [k, f(b.seconds[k] - a.seconds[k])]));
}
const sum = (r: Record<string, number>) => Object.values(r).reduce((x, y) => x + y, 0);

/**
 * Cores the system kept busy while idle: between the load's end (+0.5 s) and T0, no job is due
 * and none is posted. NaN when that span is under a second. Read beside CPU per job: a fixed
 * background cost would weigh most at low rates.
 */
function idleCores(idle: CpuReading, start: CpuReading): Record<string, number> {
  const seconds = (start.at - idle.at) / 1000;
  return cpuBetween(idle, start, (s) => (seconds >= 1 ? Math.round((s / seconds) * 1000) / 1000 : NaN));
}

// ---------------------------------------------------------------------------------------------
// Plain BullMQ.

/**
 * The plain BullMQ worker: records each job's lag as its processor starts (the first call per
 * job; `w` marks warm-up jobs, not recorded), prints "ready" once connected and, on SIGTERM,
 * closes and prints one JSON line: ran, twice, warm, p50, p90, p99, max (ms).
 */
const PLAIN_STREAM_WORKER = `
const { Worker } = require('bullmq');
const IORedis = require('ioredis');
const n = Number(process.env.N);
const lags = new Float64Array(n);
const seen = new Uint8Array(n);
let ran = 0, twice = 0, warm = 0;
const connection = new IORedis(process.env.REDIS_URL, { maxRetriesPerRequest: null });
const w = new Worker('plain', async (job) => {
  const lag = Date.now() - job.data.d;
  if (job.data.w) { warm++; return; }
  if (seen[job.data.i]++) twice++;
  else lags[ran++] = lag;
}, { connection, prefix: process.env.PREFIX, concurrency: 50 });
w.on('error', () => undefined);
w.waitUntilReady().then(() => process.stdout.write('ready\\n'));
process.on('SIGTERM', async () => {
  await w.close();
  const s = lags.subarray(0, ran).sort();
  const pct = (p) => { if (!ran) return null; const k = (ran - 1) * p, lo = Math.floor(k), hi = Math.min(lo + 1, ran - 1); return s[lo] + (s[hi] - s[lo]) * (k - lo); };
  process.stdout.write(JSON.stringify({ ran, twice, warm, p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: ran ? s[ran - 1] : null }) + '\\n', () => process.exit(0));
});
`;

interface PlainReport { ran: number; twice: number; warm: number; p50: number | null; p90: number | null; p99: number | null; max: number | null }

/** Starts the plain worker; resolves once it is connected. `report()` stops it and returns what it printed. */
async function startPlainWorker(redis: PrivateRedis, prefix: string, n: number): Promise<{ child: ChildProcess; report(): Promise<PlainReport> }> {
  const child = spawn(process.execPath, ['-e', PLAIN_STREAM_WORKER], {
    cwd: ROOT, env: { ...process.env, REDIS_URL: redis.url, PREFIX: prefix, N: String(n) }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  const lines: string[] = [];
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`plain BullMQ worker not ready after 30 s: ${stderr}`)), 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line !== 'ready') lines.push(line);
      else {
        clearTimeout(timer);
        resolve();
      }
    });
    // Once ready, a later exit (the report) settles nothing: the promise is already resolved.
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`plain BullMQ worker exited before it was ready: ${stderr}`));
    });
  });
  return {
    child,
    async report() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(force);
      const last = lines.filter((l) => l.startsWith('{')).pop();
      if (!last) throw new Error(`plain BullMQ worker printed no report: ${stderr}`);
      return JSON.parse(last) as PlainReport;
    },
  };
}

/** Jobs still in the queue (delayed, waiting, active…); completed ones are removed. */
async function inQueue(q: Queue): Promise<number> {
  const c = await q.getJobCounts('delayed', 'waiting', 'wait', 'prioritized', 'waiting-children', 'active');
  return Object.values(c).reduce((a, b) => a + b, 0);
}

async function bullmqStream(run: number, rate: number): Promise<Measurement> {
  const n = rate * opts.seconds;
  const redis = await startRedis(opts.hz);
  const prefix = `stream-${randomBytes(3).toString('hex')}`;
  const q = new Queue('plain', { connection: redis.connection, prefix });
  let worker: Awaited<ReturnType<typeof startPlainWorker>> | undefined;
  try {
    worker = await startPlainWorker(redis, prefix, n);
    const removed = { removeOnComplete: true, removeOnFail: true };
    // Warm-up: delayed jobs too, so the same path is warm.
    const warmN = Math.min(WARM_JOBS, n);
    const warmDue = Date.now() + 1000;
    await q.addBulk(Array.from({ length: warmN }, () => ({ name: 'noop', data: { d: warmDue, w: 1 }, opts: { delay: 1000, ...removed } })));
    const warmDeadline = Date.now() + 60_000;
    while ((await inQueue(q)) > 0) {
      if (Date.now() > warmDeadline) throw new Error('warm-up not drained in 60 s');
      await sleep(POLL_MS);
    }
    // addBulk of delayed jobs runs at 26,000-32,000 jobs/s here: a third of that, plus 3 s.
    const t0 = Date.now() + 3000 + n / 10;
    const due = dueOf(t0, rate);
    const l0 = Date.now();
    for (let off = 0; off < n; off += 5000) {
      const size = Math.min(5000, n - off);
      await q.addBulk(Array.from({ length: size }, (_, k) => {
        const i = off + k;
        return { name: 'noop', data: { d: due(i), i }, opts: { delay: Math.max(0, due(i) - Date.now()), ...removed } };
      }));
    }
    const loadEnd = Date.now();
    const pid = worker.child.pid;
    const sources: [string, () => number][] = [['worker', () => cpuSeconds(pid)], ['redis', () => cpuSeconds(redis.pid)]];
    const { idle, start, end, done } = await drainWindow(sources, loadEnd, t0, due(n - 1), async () => (await inQueue(q)) === 0, () => worker?.child.exitCode === null);
    const windowSeconds = (end.at - start.at) / 1000;
    const cpu = cpuBetween(start, end, (s) => (s / n) * 1e6);
    const rep = await worker.report();
    const lag: Lag = { p50: rep.p50 ?? NaN, p90: rep.p90 ?? NaN, p99: rep.p99 ?? NaN, max: rep.max ?? NaN };
    const ok = done && rep.ran === n;
    return {
      run, rate, system: 'bullmq', status: ok ? 'ok' : 'failed', jobs: n, ran: rep.ran, ranTwice: rep.twice,
      lagMs: ok ? roundLag(lag) : NO_LAG, ...(ok ? {} : { partialLagMs: roundLag(lag) }),
      cpuUsPerJob: sum(cpu), cpu, idleCores: idleCores(idle, start), windowSeconds, loadSeconds: (loadEnd - l0) / 1000, loadEndBeforeT0Ms: t0 - loadEnd,
      ...(ok ? {} : { error: done ? `${n - rep.ran} jobs never ran` : `not done ${opts.giveUpMs / 1000} s after the last was due` }),
    };
  } finally {
    if (worker && worker.child.exitCode === null) await worker.report().catch(() => undefined);
    await q.close().catch(() => undefined);
    await redis.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Almanac.

/** Any row not done yet: three probes of the small partial indexes (queued, running, cold), no count. */
async function unfinished(db: BenchDb): Promise<boolean> {
  const [{ any }] = await db.query<{ any: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'q') OR EXISTS (SELECT 1 FROM jobs WHERE state = 'r')
         OR EXISTS (SELECT 1 FROM jobs WHERE state = 's') AS any`,
  );
  return any;
}

const noops = (tag: string, n: number, due: (i: number) => number): JobBody[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'noop', key: `${tag}-${i}`, runAt: new Date(due(i)) }));

/** Lag over the tenant's succeeded attempts, from the record. */
async function recordedLag(db: BenchDb, tenant: BenchTenant): Promise<Lag> {
  const [r] = await db.query<Record<keyof Lag, number | null>>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
            percentile_cont(0.9) WITHIN GROUP (ORDER BY lag) AS p90,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99,
            max(lag) AS max
       FROM (SELECT extract(epoch FROM a.started_at - j.run_at)::float8 * 1000 AS lag
               FROM job_attempts a JOIN jobs j ON j.id = a.job_id
              WHERE j.tenant_id = $1 AND a.outcome = 'succeeded') l`,
    [tenant.id],
  );
  return { p50: Number(r.p50 ?? NaN), p90: Number(r.p90 ?? NaN), p99: Number(r.p99 ?? NaN), max: Number(r.max ?? NaN) };
}

async function almanacStream(run: number, rate: number): Promise<Measurement> {
  const n = rate * opts.seconds;
  const db = await emptyDatabase('almanac_bench_stream');
  let redis: PrivateRedis | undefined;
  let cluster: ClusterProcess | undefined;
  try {
    redis = await startRedis(opts.hz);
    cluster = new ClusterProcess(opts.root, opts.workers, {
      NODE_ENV: 'production', DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_ADMIN_TOKEN: ADMIN,
      ALMANAC_RATE_LIMIT_PER_SECOND: '0', ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '0', ALMANAC_LOG_LEVEL: process.env.ALMANAC_LOG_LEVEL ?? 'warn',
    }, (line) => {
      // cluster.js's own lines ([almanac] …) but the usual ones; with --verbose, everything.
      if (opts.verbose || (line.startsWith('[almanac]') && !/applied \d+ migration|schema is up to date|received: stopping|\] (Postgres|Redis): /.test(line))) process.stderr.write(`  cluster | ${line}\n`);
    });
    await cluster.start();
    const api = cluster.apiUrl;
    const warm = await createBenchTenant(api, ADMIN, 'warm-up');
    const tenant = await createBenchTenant(api, ADMIN, 'stream');
    // Warm-up: the same path; its ingest rate sets how far ahead T0 goes.
    const warmN = Math.min(WARM_JOBS, n);
    const w0 = Date.now();
    await postInBatches(warm, noops('warm', warmN, () => w0 + 1000), opts.connections);
    const ingestPerSecond = warmN / ((Date.now() - w0) / 1000);
    const warmDeadline = Date.now() + 60_000;
    while (await unfinished(db)) {
      if (Date.now() > warmDeadline) throw new Error('warm-up jobs not done in 60 s');
      await sleep(POLL_MS);
    }
    // Loading ends ~3 s before T0 at the warm-up's ingest rate (with half again as margin).
    const t0 = Date.now() + Math.max(4000, (n / ingestPerSecond) * 1500 + 3000);
    const due = dueOf(t0, rate);
    const l0 = Date.now();
    await postInBatches(tenant, noops('s', n, due), opts.connections);
    const loadEnd = Date.now();
    if (t0 - loadEnd < 500) log(`${rate}/s almanac: WARNING: the load ended only ${t0 - loadEnd} ms before T0`);
    const roles = cluster.instances;
    const redisPid = redis.pid;
    const sources: [string, () => number][] = [
      ...roles.map((r): [string, () => number] => [r.name.startsWith('worker') ? 'workers' : r.name, () => cpuSeconds(r.pid)]),
      ['redis', () => cpuSeconds(redisPid)],
      ['postgres', postgresCpuSeconds],
    ];
    const { idle, start, end, done } = await drainWindow(sources, loadEnd, t0, due(n - 1), async () => !(await unfinished(db)), () => {
      const gone = roles.find((r) => !Number.isFinite(cpuSeconds(r.pid)));
      if (gone) throw new Error(`${gone.name} (pid ${gone.pid}) exited during the stream`);
      return true;
    });
    const windowSeconds = (end.at - start.at) / 1000;
    const cpu = cpuBetween(start, end, (s) => (s / n) * 1e6);
    const lag = await recordedLag(db, tenant);
    const [c] = await db.query<{ jobs: number; done_once: number; attempt_rows: number; succeeded: number }>(
      `SELECT (SELECT count(*)::int FROM jobs WHERE tenant_id = $1) AS jobs,
              (SELECT count(*)::int FROM jobs WHERE tenant_id = $1 AND state = 'd' AND attempts = 1) AS done_once,
              (SELECT count(*)::int FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE j.tenant_id = $1) AS attempt_rows,
              (SELECT count(*)::int FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE j.tenant_id = $1 AND a.outcome = 'succeeded') AS succeeded`,
      [tenant.id],
    );
    const ok = done && c.jobs === n && c.done_once === n && c.succeeded === n;
    const problems = [
      ...(done ? [] : [`not done ${opts.giveUpMs / 1000} s after the last was due`]),
      ...(c.jobs === n ? [] : [`${c.jobs} rows for ${n} jobs posted`]),
      ...(c.done_once === n ? [] : [`${c.done_once} rows succeeded with one attempt`]),
      ...(c.attempt_rows === c.succeeded && c.succeeded === c.done_once ? [] : [`${c.attempt_rows} attempt rows, ${c.succeeded} succeeded`]),
    ];
    return {
      run, rate, system: 'almanac', status: ok ? 'ok' : 'failed', jobs: n, ran: c.done_once, ranTwice: Math.max(0, c.attempt_rows - c.jobs),
      lagMs: ok ? roundLag(lag) : NO_LAG, ...(ok ? {} : { partialLagMs: roundLag(lag) }),
      cpuUsPerJob: sum(cpu), cpu, idleCores: idleCores(idle, start), windowSeconds,
      loadSeconds: (loadEnd - l0) / 1000, loadEndBeforeT0Ms: t0 - loadEnd,
      ...(problems.length ? { error: problems.join('; ') } : {}),
    };
  } catch (err) {
    if (cluster) log(`cluster output, last lines:\n${cluster.lastLines()}`);
    throw err;
  } finally {
    await cluster?.stop().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    await db.drop().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// Summary.

interface Spread { median: number; min: number; max: number; runs: number[] }
function spreadOf(xs: number[], digits = 1): Spread {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return { median: NaN, min: NaN, max: NaN, runs: xs };
  const m = s.length >> 1;
  const median = s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  return { median: Number.isFinite(median) ? Math.round(median * 10 ** digits) / 10 ** digits : median, min: s[0], max: s[s.length - 1], runs: xs };
}

interface RateSummary {
  p50: Spread; p90: Spread; p99: Spread; max: Spread;
  cpuUsPerJob: Spread;
  /** Every run measured this rate and ran every job. */
  allRan: boolean;
  statuses: Measurement['status'][];
}

function summarize(ms: Measurement[], system: System, rate: number): RateSummary {
  const mine = ms.filter((m) => m.system === system && m.rate === rate);
  const lag = (k: keyof Lag) => spreadOf(mine.map((m) => m.lagMs[k]));
  return {
    p50: lag('p50'), p90: lag('p90'), p99: lag('p99'), max: lag('max'),
    cpuUsPerJob: spreadOf(mine.filter((m) => m.status !== 'skipped').map((m) => Math.round(m.cpuUsPerJob))),
    allRan: mine.length > 0 && mine.every((m) => m.status === 'ok'),
    statuses: mine.map((m) => m.status),
  };
}

const ms = (v: number) => (Number.isFinite(v) ? (v >= 100 ? Math.round(v).toLocaleString('en') : String(r1(v))) : '—');

function describe(m: Measurement): string {
  const head = `run ${m.run}: ${m.rate}/s × ${opts.seconds} s, ${SYSTEM_NAME[m.system]}`;
  if (m.status === 'skipped') return `${head}: skipped (p99 over 1 s at the two rates below)`;
  const lag = m.status === 'ok' ? m.lagMs : m.partialLagMs;
  const cpu = Object.entries(m.cpu).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ');
  return `${head}: ${m.status === 'ok' ? 'ok' : 'FAILED'}, ${m.ran}/${m.jobs} jobs ran${m.ranTwice ? `, ${m.ranTwice} twice` : ''}` +
    (lag ? `; lag p50 ${ms(lag.p50)} / p90 ${ms(lag.p90)} / p99 ${ms(lag.p99)} / max ${ms(lag.max)} ms` : '') +
    (Number.isFinite(m.cpuUsPerJob) ? `; CPU/job ${Math.round(m.cpuUsPerJob)} µs (${cpu} µs) over ${m.windowSeconds.toFixed(1)} s` : '') +
    (Number.isFinite(sum(m.idleCores)) ? `; idle before T0 ${sum(m.idleCores).toFixed(2)} cores` : '') +
    (Number.isFinite(m.loadEndBeforeT0Ms) ? `; loaded in ${m.loadSeconds.toFixed(1)} s, ${(m.loadEndBeforeT0Ms / 1000).toFixed(1)} s before T0` : '') +
    (m.error ? `; ${m.error}` : '');
}

async function main(): Promise<void> {
  const load0 = loadavg();
  const started = Date.now();
  const code = checkoutInfo(opts.root);
  log(`Almanac from ${opts.root} (${code.commit}${code.dirty ? ', uncommitted changes in apps/ or libs/' : ''}), ${opts.workers} worker process(es); ` +
    `rates ${opts.rates.join(', ')}/s for ${opts.seconds} s each, ${opts.runs} run(s), redis hz ${opts.hz}`);
  const measurements: Measurement[] = [];
  for (let run = 1; run <= opts.runs; run++) {
    const over: Record<System, number> = { bullmq: 0, almanac: 0 };
    for (const rate of opts.rates) {
      for (const system of ['bullmq', 'almanac'] as const) {
        let m: Measurement;
        if (over[system] >= 2) m = skipped(run, rate, system);
        else {
          try {
            m = system === 'bullmq' ? await bullmqStream(run, rate) : await almanacStream(run, rate);
          } catch (err) {
            m = failed(run, rate, system, err);
          }
          over[system] = m.status === 'ok' && m.lagMs.p99 <= P99_LIMIT_MS ? 0 : over[system] + 1;
        }
        measurements.push(m);
        console.log(describe(m));
      }
    }
  }

  const summary = Object.fromEntries((['bullmq', 'almanac'] as const).map((s) => [s, Object.fromEntries(opts.rates.map((r) => [String(r), summarize(measurements, s, r)]))])) as Record<System, Record<string, RateSummary>>;
  const highest = (s: System) => Math.max(0, ...opts.rates.filter((r) => summary[s][r].allRan && summary[s][r].p99.median <= P99_LIMIT_MS));
  const top = opts.rates[opts.rates.length - 1];
  const hb = highest('bullmq');
  const ha = highest('almanac');
  // Cores busy while idle, over every measurement of a system (it does not depend on the rate).
  const idle = Object.fromEntries((['bullmq', 'almanac'] as const).map((s) => [s, spreadOf(measurements.filter((m) => m.system === s && m.status !== 'skipped').map((m) => sum(m.idleCores)), 3)]));
  const highestRateP99Under1s = {
    bullmq: hb,
    almanac: ha,
    ratio: hb > 0 ? Math.round((ha / hb) * 100) / 100 : null,
    /** A system that passes at the top of the ladder may pass above it: its figure is a lower bound. */
    bullmqAtTopOfLadder: hb === top,
    almanacAtTopOfLadder: ha === top,
  };

  const range = (s: Spread) => (s.runs.length > 1 ? ` (${ms(s.min)}–${ms(s.max)})` : '');
  const rows = opts.rates.map((r) => {
    const b = summary.bullmq[r];
    const a = summary.almanac[r];
    const ratio = Number.isFinite(a.p99.median) && Number.isFinite(b.p99.median) && b.p99.median > 0 ? `${(a.p99.median / b.p99.median).toFixed(2)}×` : '—';
    return `| ${r.toLocaleString('en')} | ${ms(b.p50.median)} / ${ms(b.p99.median)}${range(b.p99)} | ${ms(b.cpuUsPerJob.median)} | ` +
      `${ms(a.p50.median)} / ${ms(a.p99.median)}${range(a.p99)} | ${ms(a.cpuUsPerJob.median)} | ${ratio} |`;
  });
  const bound = (h: number, atTop: boolean) => `${h ? `${h.toLocaleString('en')}/s` : 'none of the ladder'}${atTop ? ' (the top of the ladder: at least)' : ''}`;
  console.log([
    '',
    `medians over ${opts.runs} run(s), ${opts.seconds} s per rate, lag in ms (min–max of p99), CPU µs per job; — = not every job ran:`,
    '| jobs/s | plain BullMQ p50 / p99 | CPU | Almanac p50 / p99 | CPU | p99 Almanac / BullMQ |',
    '|---:|---|---:|---|---:|---:|',
    ...rows,
    `highest rate with p99 ≤ 1 s: plain BullMQ ${bound(hb, highestRateP99Under1s.bullmqAtTopOfLadder)}, Almanac ${bound(ha, highestRateP99Under1s.almanacAtTopOfLadder)}` +
      `${highestRateP99Under1s.ratio === null ? '' : `: Almanac / BullMQ ${highestRateP99Under1s.ratio}×`}`,
    `cores busy while idle (before T0): plain BullMQ ${idle.bullmq.median}, Almanac ${idle.almanac.median}`,
    `(${Math.round((Date.now() - started) / 60_000)} min)`,
    '',
  ].join('\n'));

  const doc = {
    bench: 'stream', at: new Date().toISOString(), command: process.argv.slice(2),
    code: { root: opts.root, ...code },
    machine: { cpus: cpus().length, loadAverageBefore: load0.map((x) => Math.round(x * 100) / 100), loadAverageAfter: loadavg().map((x) => Math.round(x * 100) / 100) },
    inputs: { rates: opts.rates, seconds: opts.seconds, runs: opts.runs, workers: opts.workers, redisHz: opts.hz, connections: opts.connections, warmupJobs: WARM_JOBS, giveUpAfterLastDueMs: opts.giveUpMs },
    seconds: Math.round((Date.now() - started) / 1000),
    notes: [
      'Lag: plain BullMQ, Date.now() as the processor starts − the due time carried in the job; Almanac, job_attempts.started_at − jobs.run_at over the succeeded attempts. Percentiles linear between ranks.',
      'CPU per job over [T0, every job done]: plain BullMQ its worker process + redis-server; Almanac every role process (api, promoter, dispatcher, workers) + redis-server + every process of the local Postgres server, which is shared with anything else on the machine.',
      `null stands for Infinity: a run that did not run every job within ${opts.giveUpMs / 1000} s of the last due time, or was skipped because the two rates below it missed p99 ≤ 1 s.`,
    ],
    summary,
    idleCores: idle,
    highestRateP99Under1s,
    measurements,
  };
  console.log(JSON.stringify(doc, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
