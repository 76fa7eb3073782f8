/**
 * Dispatch lag at a steady rate: handler start minus due time, for jobs due at a steady 500/s.
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/lag.ts [--rate 500] [--seconds 60] [--hz 10,100] [--lead 2000]
 *
 * For each Redis `hz` value: a private redis-server started with that hz (the shared one is
 * never reconfigured), a fresh database, one dispatcher and one worker process
 * (`node dist/apps/<role>/src/main.js`). A producer inserts queued `noop` rows and enqueues them
 * on the hot queue `--lead` ms ahead of their due times, which are spaced evenly at `--rate`
 * per second, so every job waits as a delayed BullMQ job and fires on time. Lag is read back
 * from the durable record: job_attempts.started_at (stamped by the worker as the handler starts)
 * minus jobs.run_at, over every job.
 */
import { randomBytes } from 'node:crypto';
import { HotQueue } from '../libs/platform/src/queues/hot-queue';
import { BenchDatabase, createBenchDatabase } from './lib/bench-db';
import { arg, PrivateRedis, sleep, startRedis } from './lib/local';
import { loadJobs, Role, spawnRole, stopRoles } from './throughput';

interface LagResult {
  hz: number;
  jobs: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

async function lagRun(db: BenchDatabase, redis: PrivateRedis, hz: number, rate: number, seconds: number, leadMs: number): Promise<LagResult> {
  await db.dataSource.query('TRUNCATE jobs, job_attempts');
  const prefix = `lag-${randomBytes(3).toString('hex')}`;
  const hot = HotQueue.open(redis.connection, prefix);
  const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: prefix };
  const roles: Role[] = [];
  try {
    roles.push(await spawnRole('dispatcher', env));
    roles.push(await spawnRole('worker', env));
    const total = rate * seconds;
    const tickMs = 100;
    const perTick = Math.round((rate * tickMs) / 1000);
    const start = Date.now() + leadMs;
    let produced = 0;
    for (let tick = 0; produced < total; tick++) {
      const tickStart = start - leadMs + tick * tickMs;
      const wait = tickStart - Date.now();
      if (wait > 0) await sleep(wait);
      const size = Math.min(perTick, total - produced);
      const base = produced;
      // due times spaced evenly: job i is due at start + i / rate seconds
      await loadJobs(db.dataSource, hot, size, (i) => new Date(start + ((base + i) * 1000) / rate), `${prefix}-${tick}`);
      produced += size;
    }
    const deadline = Date.now() + 60_000;
    for (;;) {
      await sleep(250);
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'd'`);
      if (n >= total) break;
      if (Date.now() > deadline) throw new Error(`only ${n} of ${total} jobs ran`);
    }
    const [r] = await db.dataSource.query(
      `SELECT count(*)::int AS jobs,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
              percentile_cont(0.9) WITHIN GROUP (ORDER BY lag) AS p90,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99,
              max(lag) AS max
         FROM (SELECT extract(epoch FROM a.started_at - j.run_at) * 1000 AS lag
                 FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.outcome = 'succeeded') l`,
    );
    return { hz, jobs: r.jobs, p50: Number(r.p50), p90: Number(r.p90), p99: Number(r.p99), max: Number(r.max) };
  } finally {
    await stopRoles(roles);
    await hot.queue.obliterate({ force: true }).catch(() => undefined);
    await hot.close();
  }
}

async function main(): Promise<void> {
  const rate = Number(arg('rate', '500'));
  const seconds = Number(arg('seconds', '60'));
  const leadMs = Number(arg('lead', '2000'));
  const hzs = arg('hz', '10,100').split(',').map(Number);
  const db = await createBenchDatabase('almanac_bench_lag');
  const results: LagResult[] = [];
  try {
    for (const hz of hzs) {
      const redis = await startRedis(hz);
      try {
        const r = await lagRun(db, redis, hz, rate, seconds, leadMs);
        results.push(r);
        console.log(`redis hz ${hz}: ${r.jobs} jobs at ${rate}/s for ${seconds} s: p50 ${r.p50.toFixed(1)} ms, p90 ${r.p90.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms`);
      } finally {
        await redis.stop();
      }
    }
  } finally {
    await db.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
