/**
 * Hold: N future jobs on flat Redis memory (issue 6, part 1).
 *
 *   node -r ./bench/lib/register.cjs bench/hold.ts [--n 10000000] [--baseline 1000000] [--tenants 4]
 *        [--connections 4] [--payload-bytes 100]
 *
 * A fresh database, a private redis-server (never the shared one) and the real api role in its
 * own process (`apps/api/src/main.ts`, as bench/ingest.ts runs it: production mode, rate limit
 * off). N jobs go in through `POST /v1/jobs/batch` (1,000 per request, several tenants, run times
 * uniform over the next 365 days, payloads of exactly --payload-bytes of JSON). Jobs due within
 * 24 h are queued by the api itself; then the real promoter role runs (its first promotion sweep
 * fires at boot) until no row due inside the hot horizon is left scheduled, and is stopped.
 * Reported: ingest rate, Postgres bytes per job (jobs table + indexes + TOAST), Redis used_memory
 * after promotion (hot tier only), and the plain-BullMQ baseline: --baseline delayed jobs with
 * the same payload in a second private redis-server, bytes per job extrapolated linearly to N.
 * One JSON document on stdout; progress on stderr.
 */
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { createBenchDatabase } from './lib/bench-db';
import { payloadOf } from './lib/dataset';
import { cpuSeconds, freePort, median, ROOT, sleep, startRedis } from './lib/local';
import { registerBuiltInKinds } from '../test/support/built-in-kinds';

const ADMIN = 'bench-admin-token-0123456789';
const DAY = 86_400_000;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const num = (name: string, fallback: number) => Number(arg(name, String(fallback)));
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} hold: ${msg}\n`);

export interface SourceRole {
  name: string;
  child: ChildProcess;
  port: number;
  url: string;
}

/**
 * Starts `apps/<role>/src/main.ts` from source (as bench/ingest.ts runs the api) in its own
 * process and waits for /health/ready. From source so a stale dist/ cannot be measured.
 */
export async function spawnSourceRole(role: string, env: Record<string, string>, label = role): Promise<SourceRole> {
  const port = await freePort();
  const child = spawn(process.execPath, ['-r', './bench/lib/register.cjs', `apps/${role}/src/main.ts`], {
    cwd: ROOT,
    env: { ...process.env, ALMANAC_LOG_LEVEL: process.env.BENCH_ROLE_LOG_LEVEL ?? 'warn', ...env, PORT: String(port) },
    // BENCH_ROLE_LOG_DIR=<dir> keeps each role's log (stdout) there, for a run that went wrong.
    stdio: ['ignore', process.env.BENCH_ROLE_LOG_DIR ? openSync(join(process.env.BENCH_ROLE_LOG_DIR, `${label}-${port}.log`), 'w') : 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${label} exited: ${stderr}`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${label} not ready after 90 s: ${stderr}`);
    await sleep(200);
  }
  return { name: label, child, port, url };
}

/** SIGTERM (SIGKILL after 30 s) and wait; a no-op for a process that has already exited. */
export async function stopSourceRole(r: SourceRole): Promise<void> {
  if (r.child.exitCode !== null || r.child.signalCode !== null) return;
  const exited = new Promise((res) => r.child.once('exit', res));
  r.child.kill('SIGTERM');
  const t = setTimeout(() => r.child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(t);
}

export async function createTenant(apiUrl: string, name: string): Promise<string> {
  const res = await fetch(`${apiUrl}/v1/admin/tenants`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (!res.ok) throw new Error(`create tenant: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { apiKey: string }).apiKey;
}

export const BENCH_ADMIN_TOKEN = ADMIN;

export async function usedMemory(conn: IORedis): Promise<number> {
  const info = await conn.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
}

/** Rows with a hint in Redis (queued): the hot queue counts envelopes and coarse windows, not rows. */
async function hotRows(db: { dataSource: { query: (sql: string) => Promise<{ n: number }[]> } }): Promise<number> {
  return Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'q'`))[0].n);
}

/** BullMQ jobs on the hot queue (envelopes and windows' jobs). */
async function hotQueueJobs(conn: IORedis, prefix: string): Promise<number> {
  const [delayed, wait] = await Promise.all([conn.zcard(`${prefix}:hot:delayed`), conn.llen(`${prefix}:hot:wait`)]);
  return delayed + wait;
}

/** POSTs N jobs, 1,000 per request, on `connections` lanes, tenants in turn. */
async function ingest(apiUrl: string, keys: string[], n: number, connections: number, payloadBytes: number) {
  const requests = Math.ceil(n / 1000);
  const now = Date.now();
  let next = 0;
  let ok = 0;
  let errors = 0;
  let shed = 0;
  let lastLog = Date.now();
  // Rate per tenth of the load: a spread (median, min, max) from one long run.
  const sliceJobs = Math.max(1000, Math.floor(n / 10));
  const sliceEnds: bigint[] = [];
  async function lane(): Promise<void> {
    for (;;) {
      const r = next++;
      if (r >= requests) return;
      const size = Math.min(1000, n - r * 1000);
      const jobs = Array.from({ length: size }, (_, i) => {
        const idx = r * 1000 + i;
        return { kind: 'noop', key: `h-${idx}`, runAt: new Date(now + 60_000 + Math.random() * 365 * DAY).toISOString(), payload: payloadOf(payloadBytes, idx) };
      });
      const body = JSON.stringify({ jobs });
      let res: Response;
      // A batch shed with 503 (its tenant holding all but one of the api's batch slots) goes again after Retry-After, as a producer's would.
      for (;;) {
        res = await fetch(`${apiUrl}/v1/jobs/batch`, { method: 'POST', headers: { Authorization: `Bearer ${keys[r % keys.length]}`, 'Content-Type': 'application/json' }, body });
        await res.arrayBuffer();
        const wait = Number(res.headers.get('retry-after'));
        if (res.status !== 503 || !(wait > 0)) break;
        shed++;
        await new Promise((done) => setTimeout(done, wait * 1000));
      }
      if (res.ok) ok += size;
      else errors++;
      while (ok >= (sliceEnds.length + 1) * sliceJobs) sliceEnds.push(process.hrtime.bigint());
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        log(`${ok.toLocaleString('en')} of ${n.toLocaleString('en')} ingested (${Math.round(ok / ((Date.now() - now) / 1000))}/s)`);
      }
    }
  }
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: connections }, lane));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const sliceJobsPerSecond = sliceEnds.map((end, i) => sliceJobs / (Number(end - (i ? sliceEnds[i - 1] : t0)) / 1e9));
  return { jobs: ok, errors, shed, seconds, jobsPerSecond: ok / seconds, sliceJobs, sliceJobsPerSecond };
}

async function baseline(jobs: number, payloadBytes: number) {
  const redis = await startRedis(10);
  try {
    const q = new Queue('plain', { connection: redis.connection });
    const opts = () => ({ delay: 60_000 + Math.random() * 365 * DAY, removeOnComplete: true, removeOnFail: true });
    await q.add('noop', payloadOf(payloadBytes, 0), opts()); // loads the scripts, makes the fixed keys
    const before = await usedMemory(redis.connection);
    for (let off = 0; off < jobs; off += 1000) {
      await q.addBulk(Array.from({ length: Math.min(1000, jobs - off) }, (_, i) => ({ name: 'noop', data: payloadOf(payloadBytes, off + i), opts: opts() })));
    }
    const after = await usedMemory(redis.connection);
    await q.close();
    return { jobs, bytes: after - before, bytesPerJob: (after - before) / jobs };
  } finally {
    await redis.stop();
  }
}

interface ListingTiming {
  /** median of single sequential calls, ms */
  medianMs: number;
  /** median over rounds of the wall time of 50 concurrent calls, ms */
  concurrent50Ms: number;
}

/** `GET /v1/jobs?limit=1` timed for one tenant: 5 rounds of 20 sequential calls, then of 50 at once. */
async function timeListing(apiUrl: string, key: string): Promise<ListingTiming> {
  const call = async () => {
    const t = process.hrtime.bigint();
    const res = await fetch(`${apiUrl}/v1/jobs?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
    if (!res.ok) throw new Error(`list: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const single: number[] = [];
  const concurrent: number[] = [];
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 20; i++) single.push(await call());
    const t = process.hrtime.bigint();
    await Promise.all(Array.from({ length: 50 }, call));
    concurrent.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return { medianMs: median(single), concurrent50Ms: median(concurrent) };
}

/**
 * Issue 12: a tenant's listing costs the same whatever other tenants store. `own` lists a tenant
 * holding 1/tenants of the rows; `empty` a tenant with none, among every other tenant's rows.
 */
async function measureListing(apiUrl: string, ownKey: string, emptyKey: string) {
  await timeListing(apiUrl, ownKey); // warm-up: plans, connections, caches
  const own = await timeListing(apiUrl, ownKey);
  const empty = await timeListing(apiUrl, emptyKey);
  return { own, empty, ratio: empty.medianMs / own.medianMs, concurrentRatio: empty.concurrent50Ms / own.concurrent50Ms };
}

async function main(): Promise<void> {
  const n = num('n', 10_000_000);
  const baselineJobs = num('baseline', Math.min(n, 1_000_000));
  const tenants = num('tenants', 4);
  const connections = num('connections', 4);
  const payloadBytes = num('payload-bytes', 100);
  const db = await createBenchDatabase('almanac_bench_hold', 1);
  await registerBuiltInKinds(db.dataSource); // what a worker does at boot; this part runs none
  const redis = await startRedis(10);
  const env = { NODE_ENV: 'production', DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_ADMIN_TOKEN: ADMIN, ALMANAC_RATE_LIMIT_PER_SECOND: '0', ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '0' };
  const roles: SourceRole[] = [];
  try {
    const api = await spawnSourceRole('api', env, 'api');
    roles.push(api);
    const keys: string[] = [];
    for (let t = 0; t < tenants; t++) keys.push(await createTenant(api.url, `hold-${t}`));
    // Warm-up: loads BullMQ's scripts and creates the queue's fixed keys (not a per-job cost).
    await fetch(`${api.url}/v1/jobs/batch`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${keys[0]}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ jobs: [{ kind: 'noop', key: 'warm', runAt: new Date(Date.now() + 3_600_000).toISOString(), payload: payloadOf(payloadBytes, 0) }] }),
    });
    const redisBefore = await usedMemory(redis.connection);
    const queuedBefore = await hotRows(db);
    log(`ingesting ${n.toLocaleString('en')} jobs, ${tenants} tenants, ${connections} connections`);
    const cpu0 = cpuSeconds(api.child.pid);
    const ing = await ingest(api.url, keys, n, connections, payloadBytes);
    const apiCpuUsPerJob = ((cpuSeconds(api.child.pid) - cpu0) / Math.max(1, ing.jobs)) * 1e6;
    const load1AfterIngest = loadavg()[0];
    log(`ingested ${ing.jobs.toLocaleString('en')} in ${ing.seconds.toFixed(1)} s (${Math.round(ing.jobsPerSecond)}/s, ${ing.errors} failed requests, ${ing.shed} shed and sent again)`);
    const queuedByApi = (await hotRows(db)) - queuedBefore;

    // Promotion: the real promoter role; its sweeps run at boot.
    const t0 = Date.now();
    const promoter = await spawnSourceRole('promoter', env, 'promoter');
    roles.push(promoter);
    const pending = async () =>
      Number(
        (
          await db.dataSource.query(
            `SELECT count(*)::int AS n FROM jobs WHERE state = 's' AND almanac_hour(run_at) <= almanac_hour(now() + interval '24 hours')`,
          )
        )[0].n,
      );
    for (let left = await pending(); left > 0; left = await pending()) {
      if (Date.now() - t0 > 600_000) throw new Error(`promotion incomplete after 10 min: ${left} rows`);
      await sleep(1000);
    }
    await sleep(1000);
    const promotionSeconds = (Date.now() - t0) / 1000;
    await stopSourceRole(promoter);
    const redisAfter = await usedMemory(redis.connection);
    const queued = (await hotRows(db)) - queuedBefore;
    const queueJobs = await hotQueueJobs(redis.connection, 'almanac');
    log(`promoted; ${queued.toLocaleString('en')} hot rows in ${queueJobs.toLocaleString('en')} BullMQ jobs, Redis +${(redisAfter - redisBefore).toLocaleString('en')} B`);

    await db.dataSource.query('VACUUM ANALYZE jobs');
    const [pg] = await db.dataSource.query(
      `SELECT (SELECT count(*) FROM jobs)::bigint AS rows,
              pg_total_relation_size('jobs')::bigint AS total,
              pg_relation_size('jobs')::bigint AS heap,
              pg_indexes_size('jobs')::bigint AS indexes,
              current_setting('server_version') AS version`,
    );
    const rows = Number(pg.rows);
    const listing = await measureListing(api.url, keys[0], await createTenant(api.url, 'hold-empty'));
    log(`listing limit=1: own rows ${listing.own.medianMs.toFixed(2)} ms, empty tenant ${listing.empty.medianMs.toFixed(2)} ms (${listing.ratio.toFixed(2)} ×)`);
    await stopSourceRole(api);

    log(`baseline: ${baselineJobs.toLocaleString('en')} plain BullMQ delayed jobs`);
    const base = await baseline(baselineJobs, payloadBytes);
    const baselineAtN = base.bytesPerJob * ing.jobs;
    const almanacBytes = redisAfter - redisBefore;
    process.stdout.write(
      `${JSON.stringify(
        {
          bench: 'hold',
          at: new Date().toISOString(),
          inputs: { n, tenants, connections, payloadBytes, jobsPerRequest: 1000, spreadDays: 365, baselineJobs },
          ingest: { ...ing, apiCpuUsPerJob, load1: load1AfterIngest },
          promotion: { seconds: promotionSeconds, queuedByApi, queuedAfterPromotion: queued, hotQueueJobs: queueJobs },
          postgres: {
            version: pg.version,
            rows,
            totalBytes: Number(pg.total),
            bytesPerJob: Number(pg.total) / rows,
            heapBytesPerJob: Number(pg.heap) / rows,
            indexBytesPerJob: Number(pg.indexes) / rows,
          },
          redis: {
            usedMemoryBefore: redisBefore,
            usedMemoryAfter: redisAfter,
            almanacBytes,
            hotShareOfJobs: queued / Math.max(1, ing.jobs),
            bytesPerQueuedJob: almanacBytes / Math.max(1, queued),
          },
          baseline: {
            ...base,
            extrapolatedTo: ing.jobs,
            extrapolatedBytes: baselineAtN,
            note: `plain BullMQ measured at ${baselineJobs.toLocaleString('en')} delayed jobs, bytes per job extrapolated linearly to ${ing.jobs.toLocaleString('en')}`,
          },
          almanacShareOfBaseline: almanacBytes / baselineAtN,
          listing,
          load1: loadavg()[0],
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    for (const r of roles.reverse()) await stopSourceRole(r);
    await redis.stop();
    await db.drop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
