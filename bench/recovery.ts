/**
 * Recovery: hot jobs, then Redis loses everything (issue 6, part 5).
 *
 *   node -r ./bench/lib/register.cjs bench/recovery.ts [--jobs 10000] [--runs 1] [--due-from 15000] [--due-to 30000]
 *        [--hz 100] [--deadline 180000]
 *
 * Each run: a fresh database, a private redis-server (never the shared one) and the real roles
 * as separate processes from source: api, promoter, dispatcher, worker, all with their default
 * settings (overdue/reconcile sweep every ALMANAC_OVERDUE_INTERVAL_MS = 30 s). `--jobs` `charge`
 * jobs (one invoice each) go in through `POST /v1/jobs/batch`, due uniformly between --due-from
 * and --due-to ms ahead, so the api queues each one as a delayed hot-queue job. Once every row is
 * queued (and before the first is due), `FLUSHALL`. Measured: time from the flush until every
 * job has succeeded, lost jobs (rows not succeeded at --deadline after the flush), duplicate
 * effects (invoices charged more than once, and jobs with more than one succeeded attempt), and
 * the worst lateness (first handler start − run_at). JSON on stdout, progress on stderr.
 */
import { loadavg } from 'node:os';
import { createBenchDatabase } from './lib/bench-db';
import { createTenant, BENCH_ADMIN_TOKEN, spawnSourceRole, stopSourceRole, type SourceRole } from './hold';
import { sleep, startRedis } from './lib/local';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const num = (name: string, fallback: number) => Number(arg(name, String(fallback)));
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} recovery: ${msg}\n`);

interface RecoveryRun {
  jobs: number;
  flushAfterIngestMs: number;
  allRunSecondsAfterFlush: number | null;
  lost: number;
  duplicateCharges: number;
  jobsSucceededTwice: number;
  charges: number;
  maxLatenessMs: number;
  p50LatenessMs: number;
  p99LatenessMs: number;
  rerunAttempts: number;
  load1: number;
}

async function run(jobs: number, dueFrom: number, dueTo: number, hz: number, deadlineMs: number): Promise<RecoveryRun> {
  const db = await createBenchDatabase('almanac_bench_recovery', 2);
  const redis = await startRedis(hz);
  const env = { NODE_ENV: 'production', DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_ADMIN_TOKEN: BENCH_ADMIN_TOKEN, ALMANAC_RATE_LIMIT_PER_SECOND: '0' };
  const roles: SourceRole[] = [];
  try {
    const api = await spawnSourceRole('api', env, 'api');
    roles.push(api);
    roles.push(await spawnSourceRole('promoter', env, 'promoter'));
    roles.push(await spawnSourceRole('dispatcher', env, 'dispatcher'));
    roles.push(await spawnSourceRole('worker', env, 'worker'));
    const key = await createTenant(api.url, 'recovery');
    const t0 = Date.now();
    for (let off = 0; off < jobs; off += 1000) {
      const batch = Array.from({ length: Math.min(1000, jobs - off) }, (_, i) => {
        const n = off + i;
        const runAt = new Date(t0 + dueFrom + ((dueTo - dueFrom) * n) / jobs);
        return { kind: 'charge', key: `inv-${n}`, runAt: runAt.toISOString(), payload: { invoiceId: `inv-${n}`, amountCents: 100 + (n % 900) } };
      });
      const res = await fetch(`${api.url}/v1/jobs/batch`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ jobs: batch }),
      });
      if (!res.ok) throw new Error(`batch: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
    for (;;) {
      const [{ q }] = await db.dataSource.query(`SELECT count(*) FILTER (WHERE state = 'q')::int AS q FROM jobs`);
      if (q >= jobs) break;
      if (Date.now() - t0 > dueFrom) throw new Error(`only ${q} of ${jobs} rows queued before the first was due`);
      await sleep(100);
    }
    const flushAt = Date.now();
    if (flushAt - t0 >= dueFrom) throw new Error('ingest took longer than --due-from: raise it');
    await redis.connection.flushall();
    log(`${jobs} jobs queued, FLUSHALL ${flushAt - t0} ms after the first request; waiting`);
    let doneAt: number | null = null;
    while (Date.now() - flushAt < deadlineMs) {
      const [{ d }] = await db.dataSource.query(`SELECT count(*) FILTER (WHERE state = 'd')::int AS d FROM jobs`);
      if (d >= jobs) {
        doneAt = Date.now();
        break;
      }
      for (const r of roles) if (r.child.exitCode !== null) throw new Error(`${r.name} died`);
      await sleep(250);
    }
    // Let anything still in flight land before counting effects.
    await sleep(2000);
    const [c] = await db.dataSource.query(
      `SELECT (SELECT count(*)::int FROM jobs WHERE state <> 'd') AS lost,
              (SELECT count(*)::int FROM charges) AS charges,
              (SELECT count(*)::int FROM (SELECT invoice_id FROM charges GROUP BY tenant_id, invoice_id HAVING count(*) > 1) x) AS dup_charges,
              (SELECT count(*)::int FROM (SELECT job_id FROM job_attempts WHERE outcome = 'succeeded' GROUP BY job_id HAVING count(*) > 1) x) AS twice,
              (SELECT count(*)::int FROM job_attempts WHERE outcome <> 'succeeded') AS rerun_attempts`,
    );
    const [lat] = await db.dataSource.query(
      `SELECT max(lag) AS max, percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) AS p99
         FROM (SELECT extract(epoch FROM min(a.started_at) - j.run_at) * 1000 AS lag
                 FROM jobs j JOIN job_attempts a ON a.job_id = j.id GROUP BY j.id, j.run_at) l`,
    );
    return {
      jobs,
      flushAfterIngestMs: flushAt - t0,
      allRunSecondsAfterFlush: doneAt === null ? null : (doneAt - flushAt) / 1000,
      lost: c.lost,
      duplicateCharges: c.dup_charges,
      jobsSucceededTwice: c.twice,
      charges: c.charges,
      maxLatenessMs: Number(lat.max),
      p50LatenessMs: Number(lat.p50),
      p99LatenessMs: Number(lat.p99),
      rerunAttempts: c.rerun_attempts,
      load1: loadavg()[0],
    };
  } finally {
    for (const r of roles.reverse()) await stopSourceRole(r);
    await redis.stop();
    await db.drop();
  }
}

async function main(): Promise<void> {
  const jobs = num('jobs', 10_000);
  const runs = num('runs', 1);
  const dueFrom = num('due-from', 15_000);
  const dueTo = num('due-to', 30_000);
  const hz = num('hz', 100);
  const deadline = num('deadline', 180_000);
  const results: RecoveryRun[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await run(jobs, dueFrom, dueTo, hz, deadline);
    log(`run ${i + 1}: all run ${r.allRunSecondsAfterFlush ?? 'NOT'} s after the flush, lost ${r.lost}, duplicate charges ${r.duplicateCharges}, max lateness ${Math.round(r.maxLatenessMs)} ms`);
    results.push(r);
  }
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: 'recovery',
        at: new Date().toISOString(),
        inputs: { jobs, runs, dueFromMs: dueFrom, dueToMs: dueTo, redisHz: hz, deadlineMs: deadline, kind: 'charge', overdueIntervalMs: Number(process.env.ALMANAC_OVERDUE_INTERVAL_MS ?? 30000) },
        runs: results,
      },
      null,
      2,
    )}\n`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
