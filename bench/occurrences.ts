/**
 * What a schedule's occurrences store (issue 33 item 3): per-minute schedules with a payload of
 * --payload-bytes, materialised an hour ahead by the recurring sweep, then the bytes per
 * occurrence: the jobs table (heap, TOAST, indexes) plus the stored payload versions. The
 * baseline, in the same run, is the same rows with the payload copied into each, as every
 * occurrence carried it before: a copy of `jobs` (LIKE … INCLUDING ALL) filled with them.
 *
 *   node -r ./bench/lib/register.cjs bench/occurrences.ts [--schedules 100] [--payload-bytes 200,4096,65536]
 *
 * Payloads are random hex (TOAST would compress a repeated character to nothing). Prints a
 * table and one JSON line.
 */
import { randomBytes } from 'node:crypto';
import { RecurringRepository } from '../libs/persistence/src';
import { RecurringSweep } from '../apps/promoter/src/recurring/recurring.sweep';
import { SchedulePlanner } from '../apps/promoter/src/recurring/schedule-planner';
import { createBenchDatabase } from './lib/bench-db';
import { arg } from './lib/local';

const NOW = new Date('2026-12-01T10:00:30Z');
const HOUR = 3_600_000;

interface Figure { payloadBytes: number; occurrences: number; versions: number; bytesPerOccurrence: number; copiesBytesPerOccurrence: number }

async function measure(schedules: number, payloadBytes: number): Promise<Figure> {
  const db = await createBenchDatabase('almanac_bench_occurrences');
  const ds = db.dataSource;
  try {
    for (let i = 0; i < schedules; i++) {
      const payload = JSON.stringify({ report: `r-${i}`, pad: randomBytes(Math.max(0, Math.floor((payloadBytes - 30) / 2))).toString('hex') });
      await ds.query(
        `INSERT INTO schedules (tenant_id, key, kind, cron, timezone, payload, next_run_at) VALUES (1, $1, 'noop', '* * * * *', 'UTC', $2::jsonb, $3)`,
        [`minutely-${i}`, payload, new Date('2026-12-01T10:01:00Z')],
      );
    }
    const sweep = new RecurringSweep(new RecurringRepository(ds), new SchedulePlanner({ missedCap: 100, lateToleranceMs: 300_000 }), {
      horizonMs: HOUR, batchSize: 1000, maxPerRun: 10_000_000, concurrency: 1, maxBatchRows: 20_000, maxBatchBytes: 16 * 1024 * 1024,
      maxPerTenantPerRun: Number.MAX_SAFE_INTEGER, nearMs: 10 * 60_000,
    });
    while ((await sweep.runOnce(NOW)).more);
    await ds.query(`VACUUM ANALYZE jobs`);
    await ds.query(`VACUUM ANALYZE schedule_payloads`);
    // The baseline: the same rows, each with its payload copied in.
    await ds.query(`CREATE TABLE jobs_copies (LIKE jobs INCLUDING ALL)`);
    await ds.query(
      `INSERT INTO jobs_copies (tenant_id, key, kind, run_at, payload, max_attempts, state)
       SELECT j.tenant_id, j.key, j.kind, j.run_at, COALESCE(j.payload, sp.payload), j.max_attempts, j.state
         FROM jobs j LEFT JOIN schedule_payloads sp ON sp.id = j.payload_ref`,
    );
    await ds.query(`VACUUM ANALYZE jobs_copies`);
    const [r] = await ds.query<{ n: number; versions: number; stored: string; copies: string }[]>(
      `SELECT (SELECT count(*)::int FROM jobs) AS n, (SELECT count(*)::int FROM schedule_payloads) AS versions,
              pg_total_relation_size('jobs') + pg_total_relation_size('schedule_payloads') AS stored,
              pg_total_relation_size('jobs_copies') AS copies`,
    );
    return {
      payloadBytes, occurrences: r.n, versions: r.versions,
      bytesPerOccurrence: Math.round(Number(r.stored) / r.n), copiesBytesPerOccurrence: Math.round(Number(r.copies) / r.n),
    };
  } finally {
    await db.drop();
  }
}

async function main(): Promise<void> {
  const schedules = Number(arg('schedules', '100'));
  const sizes = arg('payload-bytes', '200,4096,65536').split(',').map(Number);
  const figures: Figure[] = [];
  for (const size of sizes) figures.push(await measure(schedules, size));
  console.log(`| payload | occurrences | versions stored | bytes per occurrence | copied into each (baseline) | ratio |`);
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const f of figures) {
    console.log(`| ${f.payloadBytes} B | ${f.occurrences} | ${f.versions} | ${f.bytesPerOccurrence} | ${f.copiesBytesPerOccurrence} | ${(f.bytesPerOccurrence / f.copiesBytesPerOccurrence).toFixed(3)} |`);
  }
  console.log(JSON.stringify({ bench: 'occurrences', at: new Date().toISOString(), inputs: { schedules, sizes }, figures }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
