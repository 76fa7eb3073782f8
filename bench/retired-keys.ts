/**
 * What keeping removed jobs' keys reserved costs ingest (issue 17 item 1): the API's insert with
 * the jobs_refuse_retired_keys trigger against the same insert with the trigger disabled, in the
 * same run, alternating, beside `--retired` keys.
 *
 *   node -r ./bench/lib/register.cjs bench/retired-keys.ts [--runs 3] [--retired 30000000] [--jobs 200000]
 *        [--keys dated|random] [--shared-buffers 4GB]
 *
 * On a fresh database (with --shared-buffers, on a private Postgres cluster so configured):
 * `--retired` retired keys (what 30 days of 1,000,000 removed jobs leave), then per run and
 * variant `--jobs` new jobs through JobsRepository.insertBatch (1,000 per batch, two lanes) into
 * an emptied jobs table. `--keys dated`: keys like the retention bench's, `inv:<day>:<hash>:<n>`,
 * 30 days of them retired and the new ones of a later day (a batch's keys share a stretch of the
 * key order); `--keys random`: UUIDv4 keys on both sides, the worst case (every key its own
 * lookup). Prints one JSON document (stdout) and a table (stderr).
 */
import { randomUUID } from 'node:crypto';
import { JobsRepository, type NewJob, TenantsRepository } from '@almanac/persistence';
import { createBenchDatabase } from './lib/bench-db';
import { arg } from './lib/local';
import { startPostgres } from './lib/private-postgres';
import { round, spread } from './lib/stats';

const opts = {
  runs: Number(arg('runs', '3')),
  retired: Number(arg('retired', '30000000')),
  jobs: Number(arg('jobs', '200000')),
  keys: arg('keys', 'dated') as 'dated' | 'random',
  /** Set: on a private Postgres with this shared_buffers (e.g. 4GB) instead of the shared server. */
  sharedBuffers: arg('shared-buffers', ''),
};
const BATCH = 1000;
const PER_DAY = 1_000_000;
if (opts.keys !== 'dated' && opts.keys !== 'random') throw new Error(`--keys: dated or random, not ${String(opts.keys)}`);

/** The retired keys' texts, as SQL over generate_series' g (the retention bench's shape, or UUIDv4), and the day each was removed. */
const RETIRED_DAY_SQL = opts.keys === 'dated' ? `(1 + g / ${PER_DAY})` : `(g % 30)`;
const RETIRED_KEY_SQL = opts.keys === 'dated' ? `'inv:' || (1 + g / ${PER_DAY}) || ':' || to_hex((g * 2654435761) % 4294967296) || ':' || g` : `gen_random_uuid()::text`;
/** The n-th new key of run `seq`: a day after the retired ones, or UUIDv4. */
const newKey = (seq: number, n: number): string => (opts.keys === 'dated' ? `inv:${31 + seq}:${((n * 2654435761) >>> 0).toString(36)}:${n}` : randomUUID());
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} retired-keys: ${m}\n`);

async function main() {
  const pg = opts.sharedBuffers ? await startPostgres({ shared_buffers: opts.sharedBuffers }) : undefined;
  if (pg) process.env.ALMANAC_BENCH_PG_URL = pg.url;
  const db = await createBenchDatabase('almanac_bench_retired', 4);
  try {
    const ds = db.dataSource;
    const tenantId = (await new TenantsRepository(ds).create('bench')).tenant.id;
    let t = performance.now();
    // Loaded without the primary key, then indexed: what years of removals leave, in minutes.
    await ds.query(`ALTER TABLE retired_keys DROP CONSTRAINT retired_keys_pkey`);
    await ds.query(
      `INSERT INTO retired_keys (tenant_id, key, removed_on, state)
       SELECT $1, ${RETIRED_KEY_SQL}, DATE '2026-11-01' + ${RETIRED_DAY_SQL}, 'd' FROM generate_series(0, $2 - 1) g`,
      [tenantId, opts.retired],
    );
    await ds.query(`ALTER TABLE retired_keys ADD PRIMARY KEY (tenant_id, key)`);
    await ds.query(`VACUUM ANALYZE retired_keys`);
    const bytes = Number((await ds.query(`SELECT pg_total_relation_size('retired_keys') AS b`))[0].b);
    log(`${opts.retired.toLocaleString('en')} retired keys (${opts.keys}) in ${round((performance.now() - t) / 1000, 1)} s: ${round(bytes / Math.max(1, opts.retired), 1)} B per key`);
    const jobs = new JobsRepository(ds);
    const rates: Record<'trigger' | 'none', number[]> = { trigger: [], none: [] };
    let seq = 0;
    for (let run = 1; run <= opts.runs; run++) {
      for (const variant of run % 2 ? (['trigger', 'none'] as const) : (['none', 'trigger'] as const)) {
        await ds.query(`TRUNCATE jobs`);
        await ds.query(`ALTER TABLE jobs ${variant === 'trigger' ? 'ENABLE' : 'DISABLE'} TRIGGER jobs_refuse_retired_keys`);
        const batches = Math.ceil(opts.jobs / BATCH);
        let next = 0;
        const base = seq++;
        const lane = async () => {
          for (let b = next++; b < batches; b = next++) {
            const items: NewJob[] = Array.from({ length: Math.min(BATCH, opts.jobs - b * BATCH) }, (_, k) => ({
              kind: 'charge',
              key: newKey(base, b * BATCH + k),
              runAt: new Date(Date.now() + 86_400_000),
              payload: { invoice: k, amountCents: 1250, currency: 'EUR' },
              state: 'scheduled',
            }));
            await jobs.insertBatch(tenantId, items);
          }
        };
        t = performance.now();
        await Promise.all([lane(), lane()]);
        const rate = opts.jobs / ((performance.now() - t) / 1000);
        rates[variant].push(round(rate));
        log(`run ${run}, ${variant === 'trigger' ? 'with the trigger' : 'without it'}: ${round(rate).toLocaleString('en')} jobs/s`);
      }
    }
    await ds.query(`ALTER TABLE jobs ENABLE TRIGGER jobs_refuse_retired_keys`);
    const withTrigger = spread(rates.trigger);
    const without = spread(rates.none);
    const ratio = spread(rates.trigger.map((r, i) => round(r / rates.none[i], 3)));
    process.stderr.write(
      `\n| insert ${opts.jobs.toLocaleString('en')} jobs beside ${opts.retired.toLocaleString('en')} retired keys (${opts.keys}), median of ${opts.runs} | jobs/s |\n|---|---|\n` +
        `| with jobs_refuse_retired_keys | ${withTrigger.median} (${withTrigger.min}–${withTrigger.max}) |\n` +
        `| trigger disabled | ${without.median} (${without.min}–${without.max}) |\n` +
        `| ratio | ${ratio.median} |\n` +
        `| retired_keys bytes per key | ${round(bytes / Math.max(1, opts.retired), 1)} |\n`,
    );
    process.stdout.write(
      `${JSON.stringify({ bench: 'retired-keys', at: new Date().toISOString(), inputs: opts, summary: { withTrigger, without, ratio, bytesPerKey: round(bytes / Math.max(1, opts.retired), 1) }, rates })}\n`,
    );
  } finally {
    await db.drop();
    pg?.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
