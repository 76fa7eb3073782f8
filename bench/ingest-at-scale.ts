/**
 * Where ingest goes once `jobs` holds a retention period of rows (issue 33 item 5): the API's
 * insert (JobsRepository.insertBatch, batches of 1,000 on two lanes) into a database that holds
 * --rows finished jobs (half dated keys, half UUIDs, as bench/retention.ts' steady state holds
 * them) against an empty one, alternated in the same run, so the host's speed cancels.
 *
 *   node -r ./bench/lib/register.cjs bench/ingest-at-scale.ts [--rows 30000000] [--measure 200000] [--rounds 3]
 *        [--postgres-settings shared_buffers=6GB,max_wal_size=16GB] [--variants plain,lz4]
 */
import { JobsRepository, type NewJob, TenantsRepository } from '@almanac/persistence';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createBenchDatabase } from './lib/bench-db';
import { startPostgres } from './lib/private-postgres';
import { arg, median } from './lib/local';

const opts = {
  rows: Number(arg('rows', '30000000')),
  measure: Number(arg('measure', '200000')),
  rounds: Number(arg('rounds', '3')),
  postgresSettings: arg('postgres-settings', 'shared_buffers=6GB,max_wal_size=16GB'),
  variants: arg('variants', 'plain').split(','),
};
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ingest-at-scale: ${m}\n`);
const DAY = 86_400e3;
const NOW = Date.parse('2027-03-01T00:00:00Z');
let serial = 0;

async function ingest(ds: DataSource, tenantId: number, style: 'dated' | 'uuid', count: number): Promise<number> {
  const jobs = new JobsRepository(ds);
  const batches = Math.ceil(count / 1000);
  let next = 0;
  const base = serial;
  serial += count;
  const lane = async () => {
    for (let b = next++; b < batches; b = next++) {
      const items: NewJob[] = Array.from({ length: 1000 }, (_, k) => {
        const i = base + b * 1000 + k;
        return {
          kind: 'charge',
          key: style === 'uuid' ? randomUUID() : `inv:60:${((i * 2654435761) >>> 0).toString(36)}:${i}`,
          runAt: new Date(NOW + DAY + Math.floor(((i % 500000) / 500000) * DAY)),
          payload: { invoice: i, amountCents: 1250, currency: 'EUR' },
          state: 'scheduled',
        };
      });
      await jobs.insertBatch(tenantId, items);
    }
  };
  const t0 = performance.now();
  await Promise.all([lane(), lane()]);
  return count / ((performance.now() - t0) / 1000);
}

/** --rows finished jobs of the past 30 days, half per tenant, indexes built after, then VACUUM and a checkpoint. */
async function fill(ds: DataSource, dated: number, uuid: number): Promise<void> {
  const t0 = performance.now();
  const indexes = await ds.query<{ indexname: string; indexdef: string }[]>(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs' AND indexname <> 'jobs_pkey'`);
  for (const i of indexes) await ds.query(`DROP INDEX ${i.indexname}`);
  const half = Math.floor(opts.rows / 2);
  for (const [tenant, style] of [[dated, 'dated'], [uuid, 'uuid']] as const) {
    for (let from = 0; from < half; from += 1_000_000) {
      const key = style === 'uuid' ? `gen_random_uuid()::text` : `'inv:' || (g / 1000000) || ':' || to_hex((g * 2654435761) % 4294967296) || ':' || g`;
      await ds.query(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts, finished_at, payload, result)
         SELECT $1, ${key}, 'charge', $2::timestamptz - (g::float8 / $3) * interval '30 days', 'd', 1,
                $2::timestamptz - (g::float8 / $3) * interval '30 days' + interval '2 seconds',
                json_build_object('invoice', g, 'amountCents', 1250, 'currency', 'EUR'), '{"charged":1250}'::jsonb
           FROM generate_series($4::bigint, $5::bigint) g`,
        [tenant, new Date(NOW), half, from, Math.min(half, from + 1_000_000) - 1],
      );
    }
    log(`filled ${half.toLocaleString('en')} ${style} rows (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  }
  for (const i of indexes) await ds.query(i.indexdef);
  await ds.query(`VACUUM (ANALYZE) jobs`);
  await ds.query(`CHECKPOINT`);
  log(`indexes built, vacuumed (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}

async function main(): Promise<void> {
  const settings = Object.fromEntries(opts.postgresSettings.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
  const cluster = await startPostgres(settings);
  process.env.ALMANAC_BENCH_PG_URL = cluster.url;
  const dbs = { empty: await createBenchDatabase('almanac_bench_scale_empty', 4), full: await createBenchDatabase('almanac_bench_scale_full', 4) };
  try {
    const tenants: Record<string, { dated: number; uuid: number }> = {};
    for (const [name, db] of Object.entries(dbs)) {
      const repo = new TenantsRepository(db.dataSource);
      tenants[name] = { dated: (await repo.create('dated')).tenant.id, uuid: (await repo.create('uuid')).tenant.id };
    }
    await fill(dbs.full.dataSource, tenants.full.dated, tenants.full.uuid);
    const results: Record<string, Record<string, number[]>> = {};
    for (const variant of opts.variants) {
      // One cluster: the setting applies to both databases.
      await dbs.full.dataSource.query(`ALTER SYSTEM SET wal_compression = '${variant === 'lz4' ? 'lz4' : 'off'}'`);
      await dbs.full.dataSource.query(`SELECT pg_reload_conf()`);
      for (let r = 0; r < opts.rounds; r++) {
        for (const style of ['dated', 'uuid'] as const) {
          const order: ('empty' | 'full')[] = r % 2 === 0 ? ['empty', 'full'] : ['full', 'empty'];
          for (const name of order) {
            await dbs[name].dataSource.query('CHECKPOINT'); // each starts where a checkpoint left it: first touches write whole pages to the WAL
            const rate = await ingest(dbs[name].dataSource, tenants[name][style], style, opts.measure);
            ((results[variant] ??= {})[`${name} ${style}`] ??= []).push(rate);
            log(`${variant} round ${r + 1}: ${name} ${style} ${Math.round(rate).toLocaleString('en')} jobs/s`);
          }
        }
      }
    }
    const summary: Record<string, Record<string, number>> = {};
    const table = ['| wal_compression | keys | empty, jobs/s | full, jobs/s | full / empty, per round | median |', '|---|---|---:|---:|---|---:|'];
    for (const [variant, byCase] of Object.entries(results)) {
      for (const style of ['dated', 'uuid']) {
        const ratios = byCase[`full ${style}`].map((f, i) => f / byCase[`empty ${style}`][i]);
        (summary[variant] ??= {})[style] = Math.round(median(ratios) * 1000) / 1000;
        const rate = (xs: number[]) => Math.round(median(xs)).toLocaleString('en');
        table.push(`| ${variant === 'lz4' ? 'lz4' : 'off'} | ${style} | ${rate(byCase[`empty ${style}`])} | ${rate(byCase[`full ${style}`])} | ${ratios.map((x) => x.toFixed(2)).join(', ')} | ${median(ratios).toFixed(2)} |`);
      }
    }
    process.stderr.write(`${table.join('\n')}\n`);
    console.log(JSON.stringify({ bench: 'ingest-at-scale', at: new Date().toISOString(), inputs: opts, results, summary }));
  } finally {
    for (const db of Object.values(dbs)) await db.drop().catch(() => undefined);
    cluster.stop();
  }
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
