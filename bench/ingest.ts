/**
 * Ingest through HTTP, and what it costs Redis.
 *
 *   node -r ./bench/lib/register.cjs bench/ingest.ts [--runs 3] [--seconds 30] [--rate 1000]
 *        [--batch-requests 300] [--connections 3] [--memory-jobs 1000000] [--only single,batch,memory]
 *        [--rate-limit 0] [--tenants 1]
 *
 * Each part runs the real api role (`apps/api/src/main.ts`, one process, rate limit off unless
 * --rate-limit sets one, in jobs/s per tenant) on a
 * fresh database and a private redis-server (never the shared one):
 * - single: one job per request at a steady open-loop rate for N seconds (`lib/paced-load.ts`:
 *   latency counted from each request's due time; autocannon's `overallRate` sends in bursts);
 *   half the jobs are due within a day (row + hot queue), half spread over a year (row only).
 *   Reports p50/p99 latency and errors (non-2xx + socket errors); median of the runs. With
 *   --tenants N, request i is tenant i mod N's (a shared installation's many small producers).
 * - batch: 1000 jobs per request on several connections, bodies prepared before the clock
 *   starts; reports jobs/s (median of the runs). One tenant's: it holds at most all but one of
 *   the api's batch slots (ALMANAC_INGEST_BATCHES_IN_FLIGHT, 4), so 3 connections by default (a
 *   4th's requests would be shed with 503 and counted as errors).
 * - memory: ingests M jobs due uniformly over the next year through the batch endpoint, then
 *   reads Redis' used_memory delta and the hot queue's size: bytes per queued job, against
 *   plain BullMQ delayed jobs carrying the same payload (its own fresh redis-server).
 * Prints JSON, then a short table.
 */
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { Client } from 'pg';
import { createBenchDatabase } from './lib/bench-db';
import { arg, cpuSeconds, freePort, median, PrivateRedis, ROOT, sleep, startRedis } from './lib/local';
import { pacedLoad, PacedResult } from './lib/paced-load';
import { registerBuiltInKinds } from '../test/support/built-in-kinds';

interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AutocannonRequest) => AutocannonRequest;
}
interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p90: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}
// autocannon ships no types; this is the slice used here.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: Record<string, unknown> & { requests: AutocannonRequest[] }) => Promise<AutocannonResult>;

const ADMIN = 'bench-admin-token-0123456789';
const DAY = 86_400_000;
const PAYLOAD = { url: 'https://hooks.example.com/invoice', body: { customer: 42, amount: 1999, currency: 'EUR' } };

const num = (name: string, fallback: number) => Number(arg(name, String(fallback)));

interface Api {
  pid: number | undefined;
  url: string;
  apiKey: string;
  /** --tenants keys, the first of them apiKey. */
  apiKeys: string[];
  redis: PrivateRedis;
  /** Rows with a hint in Redis (queued): the hot queue counts envelopes and windows, not rows. */
  queuedRows(): Promise<number>;
  stop(): Promise<void>;
}

/** A fresh database + private Redis + the api role in its own process, and one tenant. */
async function startApi(): Promise<Api> {
  const db = await createBenchDatabase('almanac_bench_ingest', 1);
  await registerBuiltInKinds(db.dataSource); // what a worker does at boot; this part runs none
  await db.dataSource.destroy(); // the api process has its own pool
  const dbUrl = db.url;
  const redis = await startRedis();
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...(process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean), '-r', './bench/lib/register.cjs', 'apps/api/src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      DATABASE_URL: dbUrl,
      REDIS_URL: redis.url,
      ALMANAC_ADMIN_TOKEN: ADMIN,
      ALMANAC_LOG_LEVEL: 'warn',
      // Off by default: the figures are the API's own. A rate no run reaches (--rate-limit 10000000)
      // measures what the shared token bucket costs each request (a Redis script call).
      ALMANAC_RATE_LIMIT_PER_SECOND: arg('rate-limit', '0'),
      ALMANAC_DB_POOL_SIZE: process.env.ALMANAC_DB_POOL_SIZE ?? '10',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => { if (process.env.BENCH_API_STDERR) process.stderr.write(c); stderr = (stderr + c.toString()).slice(-4000); });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`api exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`api not ready after 60 s: ${stderr}`);
    await sleep(200);
  }
  const apiKeys: string[] = [];
  for (let t = 0; t < num('tenants', 1); t++) {
    const res = await fetch(`${url}/v1/admin/tenants`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: `bench-${t}` }),
    });
    apiKeys.push(((await res.json()) as { apiKey: string }).apiKey);
  }
  return {
    pid: child.pid,
    url,
    apiKey: apiKeys[0],
    apiKeys,
    redis,
    async queuedRows() {
      const client = new Client({ connectionString: dbUrl });
      await client.connect();
      try {
        return Number((await client.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'q'`)).rows[0].n);
      } finally {
        await client.end();
      }
    },
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(t);
      await redis.stop();
      await db.drop();
    },
  };
}

function job(key: string, runAtMs: number) {
  return { kind: 'noop', key, runAt: new Date(runAtMs).toISOString(), payload: PAYLOAD };
}

interface SingleRun extends PacedResult {
  /** CPU of the api process per request: independent of what else loads the machine. */
  apiCpuUsPerRequest: number;
  load1: number;
}

async function singleRun(api: Api, rate: number, seconds: number, tag: string): Promise<SingleRun> {
  const now = Date.now();
  const cpu0 = cpuSeconds(api.pid) * 1000;
  const headers = api.apiKeys.map((key) => ({ Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }));
  const result = await pacedLoad({
    url: api.url,
    rate,
    seconds,
    next: (i) => {
      // Half due within a day (row + hot queue), half within a year (row only).
      const runAt = now + (i % 2 ? Math.random() * DAY : DAY + Math.random() * 364 * DAY);
      return { method: 'POST', path: '/v1/jobs', headers: headers[i % headers.length], body: JSON.stringify(job(`${tag}-${i}`, runAt)) };
    },
  });
  return {
    ...result,
    apiCpuUsPerRequest: ((cpuSeconds(api.pid) * 1000 - cpu0) * 1000) / result.requests,
    load1: loadavg()[0],
  };
}

/** GET /health/live at the same rate: the framework's own floor of latency and CPU per request. */
async function baselineRun(api: Api, rate: number, seconds: number): Promise<Omit<SingleRun, 'requests' | 'rps' | 'p90' | 'max' | 'seconds' | 'lateSends'>> {
  const cpu0 = cpuSeconds(api.pid) * 1000;
  const result = await pacedLoad({ url: api.url, rate, seconds, next: () => ({ method: 'GET', path: '/health/live' }) });
  return {
    p50: result.p50,
    p99: result.p99,
    errors: result.errors,
    apiCpuUsPerRequest: ((cpuSeconds(api.pid) * 1000 - cpu0) * 1000) / result.requests,
    load1: loadavg()[0],
  };
}

interface BatchRun {
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  errors: number;
  apiCpuUsPerJob: number;
  load1: number;
}

async function batchRun(api: Api, requests: number, connections: number, tag: string, spreadMs: number): Promise<BatchRun> {
  const now = Date.now();
  const bodies = Array.from({ length: requests }, (_, r) =>
    JSON.stringify({ jobs: Array.from({ length: 1000 }, (_, i) => job(`${tag}-${r}-${i}`, now + Math.random() * spreadMs)) }),
  );
  let next = 0;
  const cpu0 = cpuSeconds(api.pid) * 1000;
  const t0 = process.hrtime.bigint();
  const result = await autocannon({
    url: api.url,
    connections,
    amount: requests,
    timeout: 60,
    requests: [
      {
        method: 'POST',
        path: '/v1/jobs/batch',
        headers: { Authorization: `Bearer ${api.apiKey}`, 'Content-Type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
      },
    ],
  });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const ok = result['2xx'];
  return {
    jobs: ok * 1000,
    seconds,
    jobsPerSecond: (ok * 1000) / seconds,
    errors: result.errors + result.non2xx + result.timeouts,
    apiCpuUsPerJob: ((cpuSeconds(api.pid) * 1000 - cpu0) * 1000) / (ok * 1000),
    load1: loadavg()[0],
  };
}

async function usedMemory(conn: IORedis): Promise<number> {
  const info = await conn.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
}

/** Average MEMORY USAGE of up to 500 job hashes matching `pattern`, plus the delayed zset per job. */
async function keyBytesPerJob(conn: IORedis, pattern: string, delayedKey: string, jobs: number): Promise<{ hash: number; zsetShare: number; encoding: string }> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await conn.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0' && keys.length < 500);
  const sample = keys.slice(0, 500);
  const sizes = await Promise.all(sample.map((k) => conn.memory('USAGE', k)));
  const encoding = sample[0] ? String(await conn.object('ENCODING', sample[0])) : 'none';
  const zset = Number(await conn.memory('USAGE', delayedKey)) || 0;
  return { hash: sizes.reduce((a: number, b) => a + Number(b ?? 0), 0) / Math.max(1, sample.length), zsetShare: zset / Math.max(1, jobs), encoding };
}

async function memoryRun(jobs: number, connections: number) {
  const api = await startApi();
  try {
    // Warm-up: one queued job loads BullMQ's scripts and creates the queue's fixed keys, which
    // are not per-job costs.
    await fetch(`${api.url}/v1/jobs`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${api.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(job('warm', Date.now() + 3_600_000)),
    });
    const before = await usedMemory(api.redis.connection);
    const t0 = Date.now();
    const batch = await batchRun(api, Math.ceil(jobs / 1000), connections, 'mem', 365 * DAY);
    const queued = (await api.queuedRows()) - 1;
    const after = await usedMemory(api.redis.connection);
    const almanac = {
      ingested: batch.jobs,
      seconds: (Date.now() - t0) / 1000,
      queued,
      bytes: after - before,
      bytesPerQueuedJob: (after - before) / queued,
    };
    // Plain BullMQ: as many delayed jobs as Almanac queued, the payload in Redis as BullMQ does it.
    const plainRedis = await startRedis();
    try {
      const q = new Queue('plain', { connection: plainRedis.connection });
      const opts = () => ({ delay: 3_600_000 + Math.random() * DAY, removeOnComplete: true, removeOnFail: true });
      await q.add('noop', PAYLOAD, opts());
      const b0 = await usedMemory(plainRedis.connection);
      const n = queued;
      for (let off = 0; off < n; off += 1000) {
        await q.addBulk(Array.from({ length: Math.min(1000, n - off) }, () => ({ name: 'noop', data: PAYLOAD, opts: opts() })));
      }
      const b1 = await usedMemory(plainRedis.connection);
      const keys = await keyBytesPerJob(plainRedis.connection, 'bull:plain:[0-9]*', 'bull:plain:delayed', n + 1);
      await q.close();
      return {
        almanac,
        bullmq: { jobs: n, bytes: b1 - b0, bytesPerJob: (b1 - b0) / n, keys },
        redisShareOfJobs: queued / batch.jobs,
      };
    } finally {
      await plainRedis.stop();
    }
  } finally {
    await api.stop();
  }
}

async function main(): Promise<void> {
  const runs = num('runs', 3);
  const seconds = num('seconds', 30);
  const rate = num('rate', 1000);
  const batchRequests = num('batch-requests', 300);
  const connections = num('connections', 3);
  const memoryJobs = num('memory-jobs', 1_000_000);
  const only = new Set(arg('only', 'single,batch,memory').split(','));
  const out: Record<string, unknown> = { cpus: (await import('node:os')).cpus().length, runs };

  if (only.has('single') || only.has('batch')) {
    const api = await startApi();
    try {
      // Warm-up: JIT, connection pools, prepared statements.
      await singleRun(api, Math.min(rate, 500), 3, 'warm');
      if (only.has('single')) {
        const r: SingleRun[] = [];
        for (let i = 0; i < runs; i++) r.push(await singleRun(api, rate, seconds, `single${i}`));
        out.single = {
          rate,
          seconds,
          p50: median(r.map((x) => x.p50)),
          p99: median(r.map((x) => x.p99)),
          errors: r.reduce((a, x) => a + x.errors, 0),
          apiCpuUsPerRequest: median(r.map((x) => x.apiCpuUsPerRequest)),
          runs: r,
          baselineHealthLive: await baselineRun(api, rate, Math.min(seconds, 10)),
        };
      }
      if (only.has('batch')) {
        const r: BatchRun[] = [];
        for (let i = 0; i < runs; i++) r.push(await batchRun(api, batchRequests, connections, `batch${i}`, 365 * DAY));
        out.batch = { connections, jobsPerRequest: 1000, jobsPerSecond: median(r.map((x) => x.jobsPerSecond)), errors: r.reduce((a, x) => a + x.errors, 0), runs: r };
      }
    } finally {
      await api.stop();
    }
  }
  if (only.has('memory')) out.memory = await memoryRun(memoryJobs, connections);

  console.log(JSON.stringify(out, null, 2));
  const single = out.single as
    | { p50: number; p99: number; errors: number; apiCpuUsPerRequest: number; baselineHealthLive: { p99: number; apiCpuUsPerRequest: number } }
    | undefined;
  const batch = out.batch as { jobsPerSecond: number; errors: number } | undefined;
  const memory = out.memory as Awaited<ReturnType<typeof memoryRun>> | undefined;
  const rows: [string, string, string][] = [];
  if (single) {
    rows.push([`single POST @ ${rate}/s, ${seconds}s (median of ${runs})`, `p50 ${single.p50} ms, p99 ${single.p99} ms, errors ${single.errors}`, 'p99 <= 10 ms, 0 errors']);
    rows.push(['  api CPU per request: POST /v1/jobs | GET /health/live', `${Math.round(single.apiCpuUsPerRequest)} us | ${Math.round(single.baselineHealthLive.apiCpuUsPerRequest)} us (p99 ${single.baselineHealthLive.p99} ms)`, '']);
  }
  if (batch) rows.push([`batch 1000/request, ${connections} conns (median of ${runs})`, `${Math.round(batch.jobsPerSecond)} jobs/s, errors ${batch.errors}`, '>= 50,000 jobs/s']);
  rows.push(['load average (1 min) at the end', loadavg()[0].toFixed(1), `${out.cpus as number} CPUs`]);
  if (memory) {
    rows.push([`Redis after ${memory.almanac.ingested} jobs over a year`, `${memory.almanac.queued} queued (${(memory.redisShareOfJobs * 100).toFixed(2)}%), ${Math.round(memory.almanac.bytesPerQueuedJob)} B/queued job`, '~1/365 in Redis']);
    rows.push(['plain BullMQ delayed job, same payload', `${Math.round(memory.bullmq.bytesPerJob)} B/job`, 'Almanac < BullMQ']);
    const k = (x: { hash: number; zsetShare: number; encoding: string }) => `${Math.round(x.hash + x.zsetShare)} B (hash ${Math.round(x.hash)} ${x.encoding} + zset ${Math.round(x.zsetShare)})`;
    rows.push(['per-job keys (MEMORY USAGE), BullMQ', k(memory.bullmq.keys), '']);
  }
  for (const [a, b, c] of rows) console.log(`${a.padEnd(52)} ${b.padEnd(52)} target: ${c}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
