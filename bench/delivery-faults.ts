/**
 * Delivery under worker faults, with the real role processes (dist/): what issue 11 promises.
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/delivery-faults.ts --mode sigkill|rolling|outage|backlog [options]
 *
 * sigkill  `charge` jobs (one invoice each) due at --rate/s for --seconds, a promoter (overdue
 *          sweep every second), a dispatcher and --workers (2) workers (lease --lease-ms, 2 s);
 *          every --every ms one worker is SIGKILLed and a new one started --restart-after ms
 *          later (0). `--workers 1 --restart-after 5000 --lease-ms 30000` is issue 31's check: a
 *          dead worker is noticed by its heartbeat, not its lease.
 * rolling  the same load; every --every ms one worker gets SIGTERM (as Kubernetes does in a
 *          rolling update), is waited for, and is replaced.
 * outage   --jobs `noop` jobs (maxAttempts 1) come due while no worker runs at all; after
 *          --outage ms (several leases) one worker starts.
 * backlog  --jobs `noop` jobs (maxAttempts 1) due at one instant for one worker process at
 *          concurrency 10, with a 2 s lease and the overdue sweep every second.
 *
 * Afterwards, from the rows: jobs not done, jobs dead, `lost` attempts, jobs run more than once,
 * attempts whose handler never ran (lost or released on a job whose every run left no effect is
 * counted as "attempts not a run": for charge, attempts − charges), duplicate charges. Prints
 * one JSON line and a verdict; exit code 1 when a promise is broken.
 */
import { randomBytes } from 'node:crypto';
import { HotQueue } from '../libs/platform/src/queues/hot-queue';
import { createBenchDatabase } from './lib/bench-db';
import { arg, sleep, startRedis } from './lib/local';
import { loadJobs, Role, spawnRole, stopRoles } from './throughput';

type Mode = 'sigkill' | 'rolling' | 'outage' | 'backlog';

async function main(): Promise<void> {
  const mode = arg('mode', 'sigkill') as Mode;
  const db = await createBenchDatabase('almanac_bench_faults');
  const redis = await startRedis(100);
  const prefix = `faults-${randomBytes(3).toString('hex')}`;
  const hot = HotQueue.open(redis.connection, prefix);
  const env: Record<string, string> = {
    DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: prefix,
    ALMANAC_OVERDUE_INTERVAL_MS: '1000', ALMANAC_OVERDUE_GRACE_MS: '5000', ALMANAC_LEASE_MS: arg('lease-ms', '2000'),
  };
  const roles: Role[] = [];
  const t0 = Date.now();
  let total: number;
  let faults = 0;
  let attemptsDuringOutage: number | undefined;
  try {
    roles.push(await spawnRole('promoter', env), await spawnRole('dispatcher', env));
    if (mode === 'sigkill' || mode === 'rolling') {
      const r = await steadyCharges(db.dataSource, hot, env, mode, roles);
      total = r.total;
      faults = r.faults;
    } else {
      total = Number(arg('jobs', mode === 'backlog' ? '100000' : '2000'));
      await db.dataSource.query(`ALTER TABLE jobs ALTER COLUMN max_attempts SET DEFAULT 1`);
      await loadJobs(db.dataSource, hot, total, () => new Date(), 'f');
      if (mode === 'outage') {
        await sleep(Number(arg('outage', '20000'))); // ten leases with no worker
        const [{ attempts }] = await db.dataSource.query(`SELECT coalesce(sum(attempts), 0)::int AS attempts FROM jobs`);
        attemptsDuringOutage = attempts as number;
        console.log(`after the outage: ${attempts} attempts counted on ${total} due jobs`);
      }
      roles.push(await spawnRole('worker', mode === 'backlog' ? { ...env, ALMANAC_WORKER_CONCURRENCY: '10' } : env));
    }
    const deadline = Date.now() + Number(arg('drain-timeout', '600000'));
    for (;;) {
      const [{ open }] = await db.dataSource.query(`SELECT count(*)::int AS open FROM jobs WHERE state IN ('q', 'r', 's')`);
      if (open === 0 || Date.now() > deadline) break;
      for (const r of roles) if (r.child.exitCode !== null) throw new Error(`${r.name} died`);
      await sleep(500);
    }
    const [c] = await db.dataSource.query(
      `SELECT (SELECT count(*)::int FROM jobs WHERE state IN ('q', 'r', 's')) AS not_done,
              (SELECT count(*)::int FROM jobs WHERE state = 'x') AS dead,
              (SELECT count(*)::int FROM jobs WHERE state = 'd') AS done,
              (SELECT count(*)::int FROM jobs WHERE attempts > 1) AS run_more_than_once,
              (SELECT count(*)::int FROM job_attempts WHERE outcome = 'lost') AS lost_attempts,
              (SELECT count(*)::int FROM job_attempts WHERE outcome = 'released') AS released_attempts,
              (SELECT coalesce(sum(attempts), 0)::int FROM jobs) AS attempts,
              (SELECT count(*)::int FROM charges) AS charges,
              (SELECT count(*)::int - count(DISTINCT invoice_id)::int FROM charges) AS duplicate_charges,
              (SELECT coalesce(max(extract(epoch FROM a.started_at - j.run_at)), 0)::float8
                 FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.outcome = 'succeeded') AS max_lateness_s`,
    );
    const seconds = (Date.now() - t0) / 1000;
    const [lateness] = await db.dataSource.query(
      `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY l) AS p99_lateness_s FROM (
         SELECT extract(epoch FROM a.started_at - j.run_at)::float8 AS l FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.outcome = 'succeeded') x`,
    );
    const shape = { workers: Number(arg('workers', '2')), restartAfterMs: Number(arg('restart-after', '0')), leaseMs: Number(env.ALMANAC_LEASE_MS) };
    console.log(JSON.stringify({ mode, jobs: total, faults, seconds, attemptsDuringOutage, ...shape, ...c, p99_lateness_s: Number(lateness.p99_lateness_s) }));
    const charges = mode === 'sigkill' || mode === 'rolling';
    const ok =
      c.not_done === 0 && c.dead === 0 && c.duplicate_charges === 0 && (!charges || c.charges === total) &&
      (mode === 'sigkill' || c.lost_attempts === 0) && (mode !== 'outage' && mode !== 'backlog' ? true : c.run_more_than_once === 0) &&
      !attemptsDuringOutage;
    console.log(
      `${ok ? 'OK' : 'FAILED'}: ${mode}, ${total} jobs, ${faults} faults: ${c.not_done} not done, ${c.dead} dead, ` +
        `${c.lost_attempts} lost attempts, ${c.released_attempts} released, ${c.run_more_than_once} run more than once, ` +
        `${c.duplicate_charges} duplicate charges, max lateness ${Number(c.max_lateness_s).toFixed(1)} s`,
    );
    if (!ok) process.exitCode = 1;
  } finally {
    await stopRoles(roles);
    await hot.close();
    await redis.stop();
    await db.drop();
  }
}

/** `charge` jobs due at a steady rate while workers are killed (SIGKILL) or rolled (SIGTERM). */
async function steadyCharges(
  ds: import('typeorm').DataSource, hot: HotQueue, env: Record<string, string>, mode: 'sigkill' | 'rolling', roles: Role[],
): Promise<{ total: number; faults: number }> {
  const rate = Number(arg('rate', '200'));
  const seconds = Number(arg('seconds', '60'));
  const every = Number(arg('every', '10000'));
  const restartAfter = Number(arg('restart-after', '0'));
  const workers: Role[] = [];
  const restarts: Promise<void>[] = [];
  for (let i = 0; i < Number(arg('workers', '2')); i++) workers.push(await spawnRole('worker', env, `worker-${String.fromCharCode(97 + i)}`));
  const total = rate * seconds;
  const start = Date.now() + 2000;
  let produced = 0;
  let faults = 0;
  let nextFault = Date.now() + every;
  for (let tick = 0; produced < total || Date.now() < start + seconds * 1000; tick++) {
    const wait = start - 2000 + tick * 100 - Date.now();
    if (wait > 0) await sleep(wait);
    if (Date.now() >= nextFault) {
      nextFault += every;
      const idx = faults % workers.length;
      const victim = workers[idx];
      const exited = new Promise((r) => victim.child.once('exit', r));
      victim.child.kill(mode === 'sigkill' ? 'SIGKILL' : 'SIGTERM');
      faults++;
      // A rolling update starts the new pod while the old one drains; a crash restarts after (a
      // new pod --restart-after ms later), beside the stream, which goes on.
      const name = `worker-${faults}`;
      const replacement =
        mode === 'rolling'
          ? spawnRole('worker', env, name)
          : exited.then(() => sleep(restartAfter)).then(() => spawnRole('worker', env, name));
      restarts.push(exited.then(() => replacement).then((w) => void (workers[idx] = w)));
      if (restartAfter === 0) await restarts[restarts.length - 1];
    }
    if (produced >= total) continue;
    const size = Math.min(rate / 10, total - produced);
    const base = produced;
    const rows: { id: string; run_at: Date }[] = await ds.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state, payload)
       SELECT 1, 'inv-' || i, 'charge', $2::timestamptz + (i - $1) * ($3::float8 * interval '1 millisecond'), 'q',
              jsonb_build_object('invoiceId', 'inv-' || i, 'amountCents', 100)
         FROM generate_series($1::int, $1::int + $4 - 1) AS i
       RETURNING id::text AS id, run_at`,
      [base, new Date(start + (base * 1000) / rate), 1000 / rate, size],
    );
    await hot.enqueue(rows.map((r) => ({ id: r.id, runAt: r.run_at, dueMs: r.run_at.getTime(), tenantId: 1, kind: 'charge' })), new Date());
    produced += size;
  }
  await Promise.all(restarts);
  roles.push(...workers);
  return { total, faults };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
