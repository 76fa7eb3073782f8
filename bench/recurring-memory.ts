/**
 * The promoter's memory while one tenant's schedules are heavy (issue 12): N per-minute
 * schedules with a 2 KB payload for one tenant, a few hourly ones for another.
 *
 *   npm run build
 *   node -r ./bench/lib/register.cjs bench/recurring-memory.ts [--schedules 1500] [--payload-bytes 2048] [--seconds 90]
 *
 * Runs the real promoter role (dist/) against a fresh database and a private redis-server and
 * samples its resident memory (/proc/<pid>/status VmRSS) every 500 ms for --seconds. Reports the
 * peak, the occurrences materialised per tenant, and whether the quiet tenant's schedules
 * materialised (issue: one tenant's schedules never stop another's). Before the recurring sweep
 * was bounded by rows and bytes, 1,500 such schedules took the promoter from 107 MB to 1.37 GB
 * and every run failed with `Invalid string length`.
 */
import { readFileSync } from 'node:fs';
import { createBenchDatabase } from './lib/bench-db';
import { arg, sleep, startRedis } from './lib/local';
import { spawnRole, stopRoles } from './throughput';

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

async function main(): Promise<void> {
  const schedules = Number(arg('schedules', '1500'));
  const payloadBytes = Number(arg('payload-bytes', '2048'));
  const seconds = Number(arg('seconds', '90'));
  const db = await createBenchDatabase('almanac_bench_recmem', 2);
  const redis = await startRedis(10);
  const payload = JSON.stringify({ blob: 'x'.repeat(payloadBytes) });
  await db.dataSource.query(
    `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, next_run_at)
     SELECT 1, 'noisy-' || g, 'noop', '* * * * *', 'UTC', $1::jsonb, now() FROM generate_series(1, $2) g`,
    [payload, schedules],
  );
  await db.dataSource.query(
    `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, next_run_at)
     SELECT 2, 'quiet-' || g, 'noop', '0 * * * *', 'UTC', '{"r":1}'::jsonb, now() FROM generate_series(1, 10) g`,
  );
  const roles = [await spawnRole('promoter', { DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_QUEUE_PREFIX: 'recmem' })];
  const pid = roles[0].child.pid as number;
  const samples: number[] = [];
  let quietDoneAfterS: number | null = null;
  try {
    const t0 = Date.now();
    while (Date.now() - t0 < seconds * 1000) {
      samples.push(rssMb(pid));
      if (quietDoneAfterS === null) {
        const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = 2`);
        // Each hourly schedule's next occurrence (the recurring horizon is an hour ahead).
        if (n >= 10) quietDoneAfterS = (Date.now() - t0) / 1000;
      }
      if (roles[0].child.exitCode !== null) throw new Error('promoter died');
      await sleep(500);
    }
    const counts: { tenant_id: number; n: number }[] = await db.dataSource.query(`SELECT tenant_id, count(*)::int AS n FROM jobs GROUP BY tenant_id ORDER BY 1`);
    const result = {
      bench: 'recurring-memory', at: new Date().toISOString(), inputs: { schedules, payloadBytes, seconds },
      rssStartMb: samples[0], rssPeakMb: Math.max(...samples), rssEndMb: samples[samples.length - 1],
      occurrencesByTenant: Object.fromEntries(counts.map((c) => [c.tenant_id, c.n])),
      quietTenantMaterialisedAfterS: quietDoneAfterS,
    };
    process.stderr.write(
      `promoter RSS: start ${result.rssStartMb.toFixed(0)} MB, peak ${result.rssPeakMb.toFixed(0)} MB, end ${result.rssEndMb.toFixed(0)} MB (limit 300 MB); ` +
        `occurrences ${JSON.stringify(result.occurrencesByTenant)}; quiet tenant's 10 hourly schedules materialised after ${quietDoneAfterS ?? 'NEVER'} s\n`,
    );
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await stopRoles(roles);
    await redis.stop();
    await db.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
