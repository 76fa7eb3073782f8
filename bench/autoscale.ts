/**
 * Scale before the spike (issue 19 item 4): the worker pool's rendered ScaledObject query,
 * evaluated against a real Prometheus scraping `npm run cluster`, asks for the replicas a spike
 * needs minutes before it is due, and falls back to the floor after it.
 *
 *   node -r ./bench/lib/register.cjs bench/autoscale.ts [--spike 200000] [--lead-minutes 10]
 *        [--capacity-jobs 120000] [--workers 4] [--concurrency 100] [--sleep-ms 500]
 *        [--connections 4] [--floor-minutes 2] [--timeout-minutes 20] [--root <checkout>] [--verbose]
 *
 * 1. `kubectl kustomize <root>/k8s/worker` (offline): the ScaledObject's query, threshold,
 *    min/max replicas and pollingInterval, exactly as they would be applied.
 * 2. scripts/cluster.js (api, promoter, dispatcher and --workers workers from dist/) on a fresh
 *    database on ALMANAC_BENCH_PG_URL and a private redis-server; workers at
 *    ALMANAC_WORKER_CONCURRENCY=--concurrency run `noop` jobs that sleep --sleep-ms, so a replica
 *    runs at most concurrency × 1000 / sleep-ms jobs/s while the CPU stays low.
 *    A private Prometheus (PROMETHEUS_BIN, default /usr/bin/prometheus) scrapes the cluster's
 *    targets file every 5 s and evaluates <root>/k8s/monitoring/rules/almanac.rules.yml every 15 s.
 * 3. Capacity: --capacity-jobs jobs due at once saturate the pool for over two minutes, so the
 *    recording rules measure a replica's throughput (pool:almanac_replica_throughput:per_second
 *    stops being the workers' configured default).
 * 4. The spike: --spike jobs due at T, POSTed through @almanac/client (1,000 per request,
 *    --connections at once); T is --lead-minutes after the first POST plus a margin that lets the
 *    posting end before T − lead, so the whole spike is on the books when it enters the window.
 * 5. From the first POST, every pollingInterval: the query through /api/v1/query (KEDA's poll),
 *    desired = min(max, max(min, ceil(value / threshold))) (KEDA's AverageValue; an empty answer
 *    counts as the floor here; the ScaledObject's ignoreNullValues "false" makes it an error for KEDA, which then applies its fallback), the due curve and backlog + in flight; until
 *    the spike has drained and desired has stayed at the floor for --floor-minutes (at most
 *    --timeout-minutes after T).
 *
 * Needed replicas = ceil(spike / (throughput × window)): what runs the spike within the window
 * the ScaledObject plans for (its almanac.io/scaling-window annotation, 5 minutes). JSON on stdout, a table on stderr, the chart in bench/charts/autoscale.svg.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { type BenchTenant, checkoutInfo, createBenchTenant, type JobBody, postInBatches } from './lib/bench-tenants';
import { autoscaleChart, type AutoscaleDoc, type AutoscaleSample } from './lib/autoscale-chart';
import { type BenchDb, ClusterProcess, emptyDatabase } from './lib/cluster-process';
import { type PrivatePrometheus, startPrometheus } from './lib/autoscale-prometheus';
import { desiredReplicas, renderWorkerScaledObject, type ScaledObjectSpec } from './lib/autoscale-scaledobject';
import { lineChartSvg } from './lib/line-chart';
import { arg, ROOT, sleep, startRedis, type PrivateRedis } from './lib/local';

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} autoscale: ${msg}\n`);
const ADMIN = 'autoscale-admin-token-0123456789';

const opts = {
  spike: Number(arg('spike', '200000')),
  leadMinutes: Number(arg('lead-minutes', '10')),
  capacityJobs: Number(arg('capacity-jobs', '120000')),
  workers: Number(arg('workers', '4')),
  concurrency: Number(arg('concurrency', '100')),
  sleepMs: Number(arg('sleep-ms', '500')),
  connections: Number(arg('connections', '4')),
  floorMinutes: Number(arg('floor-minutes', '2')),
  timeoutMinutes: Number(arg('timeout-minutes', '20')),
  root: arg('root', ROOT),
  prometheus: process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus',
  verbose: process.argv.includes('--verbose'),
};

const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;
const roundOrNull = (v: number | null) => (v === null ? null : round(v, 2));

// ---------------------------------------------------------------------------------------------
// Posting jobs through @almanac/client, as a producer does.

/** `n` noop jobs due at `dueMs`, POSTed 1,000 per request, --connections requests at once; returns the seconds it took. */
async function postJobs(tenant: BenchTenant, tag: string, n: number, dueMs: number): Promise<number> {
  const t0 = Date.now();
  const jobs = Array.from({ length: n }, (_, i): JobBody => ({ kind: 'noop', key: `${tag}-${i}`, runAt: new Date(dueMs), payload: { sleepMs: opts.sleepMs } }));
  await postInBatches(tenant, jobs, opts.connections);
  return (Date.now() - t0) / 1000;
}

async function busy(db: BenchDb): Promise<boolean> {
  const [{ busy }] = await db.query<{ busy: boolean }>(`SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'q') OR EXISTS (SELECT 1 FROM jobs WHERE state = 'r') AS busy`);
  return busy;
}

/** A tenant's attempts: how many, and the first start and last finish (epoch ms). */
async function attemptSpan(db: BenchDb, tenantId: number): Promise<{ n: number; firstStart: number; lastFinish: number }> {
  const [r] = await db.query<{ n: number; first_start: string; last_finish: string }>(
    `SELECT count(*)::int AS n, extract(epoch FROM min(a.started_at)) * 1000 AS first_start, extract(epoch FROM max(a.finished_at)) * 1000 AS last_finish
       FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE j.tenant_id = $1`,
    [tenantId],
  );
  return { n: r.n, firstStart: Number(r.first_start), lastFinish: Number(r.last_finish) };
}

// ---------------------------------------------------------------------------------------------
// Evaluating the ScaledObject's query, as KEDA does every pollingInterval.

/** The argument of an outer `max(...)`: its terms, evaluated apart to show which one carries. */
function innerOfMax(query: string): string | null {
  const open = /^max\s*\(/.exec(query);
  if (!open) return null;
  let depth = 0;
  for (let i = open[0].length - 1; i < query.length; i++) {
    if (query[i] === '(') depth++;
    else if (query[i] === ')' && --depth === 0) return i === query.length - 1 ? query.slice(open[0].length, i) : null;
  }
  return null;
}

const labelsKey = (labels: Record<string, string>) => Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',') || 'value';

async function evaluate(prom: PrivatePrometheus, so: ScaledObjectSpec, T: number, previousDesired: number): Promise<AutoscaleSample> {
  const first = (expr: string) => prom.query(expr).then((r) => (r.length ? r[0].value : null), () => null);
  const inner = innerOfMax(so.query);
  const at = Date.now();
  const [answer, terms, due, backlogInFlight, throughput, executionsPerSecond] = await Promise.all([
    prom.query(so.query).then((r) => ({ r }), (err: unknown) => ({ err: err instanceof Error ? err.message : String(err) })),
    inner ? prom.query(inner).catch(() => []) : Promise.resolve([]),
    prom.query('max by (within) (almanac_jobs_due{pool="default"})').catch(() => []),
    first('max(almanac_pool_backlog{pool="default"}) + max(almanac_pool_in_flight{pool="default"})'),
    first('max(pool:almanac_replica_throughput:per_second{pool="default"})'),
    first('sum(rate(almanac_executions_total[1m]))'),
  ]);
  const sample: AutoscaleSample = {
    atS: round((at - T) / 1000),
    value: null,
    answer: 'value',
    desired: previousDesired,
    terms: Object.fromEntries(terms.map((t) => [labelsKey(t.labels), round(t.value, 3)])),
    due: Object.fromEntries(due.map((d) => [d.labels.within ?? '?', d.value])),
    backlogInFlight,
    throughput: throughput === null ? null : round(throughput, 2),
    executionsPerSecond: executionsPerSecond === null ? null : round(executionsPerSecond),
  };
  // KEDA's prometheus scaler: no element (with ignoreNullValues "false"; counted as the floor
  // here), more than one or a non-number is an error, and on an error the HPA keeps its count
  // (the fallback only after 3 failures).
  if ('err' in answer) return { ...sample, answer: 'error', error: answer.err };
  if (answer.r.length === 0) return { ...sample, answer: 'empty', desired: desiredReplicas(so, 0) };
  if (answer.r.length > 1) return { ...sample, answer: 'error', error: `${answer.r.length} elements` };
  const value = answer.r[0].value;
  if (!Number.isFinite(value)) return { ...sample, answer: 'error', error: String(value) };
  return { ...sample, value: round(value, 4), desired: desiredReplicas(so, value) };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const load0 = loadavg();
  const so = renderWorkerScaledObject(opts.root);
  log(`${opts.root} (${checkoutInfo(opts.root).commit}): ScaledObject ${so.name}: min ${so.minReplicas}, max ${so.maxReplicas}, threshold ${so.threshold} (${so.metricType}), every ${so.pollingSeconds} s; query:\n    ${so.query.replace(/\n/g, '\n    ')}`);
  const rulesFile = join(opts.root, 'k8s/monitoring/rules/almanac.rules.yml');

  let db: BenchDb | undefined;
  let redis: PrivateRedis | undefined;
  let cluster: ClusterProcess | undefined;
  let prom: PrivatePrometheus | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await prom?.stop().catch((err: unknown) => log(`prometheus stop: ${String(err)}`));
      await cluster?.stop().catch((err: unknown) => log(`cluster stop: ${String(err)}`));
      await redis?.stop().catch(() => undefined);
      await db?.drop().catch((err: unknown) => log(`drop database: ${String(err)}`));
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log(`${sig}: stopping prometheus, the cluster and redis, dropping the database`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    db = await emptyDatabase('almanac_bench_autoscale');
    redis = await startRedis();
    cluster = new ClusterProcess(opts.root, opts.workers, {
      NODE_ENV: 'production', DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_ADMIN_TOKEN: ADMIN,
      ALMANAC_RATE_LIMIT_PER_SECOND: '0', ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '0', ALMANAC_LOG_LEVEL: process.env.ALMANAC_LOG_LEVEL ?? 'warn',
      ALMANAC_WORKER_CONCURRENCY: String(opts.concurrency),
    }, (line) => {
      if (opts.verbose || line.startsWith('[almanac]')) process.stderr.write(`  cluster | ${line}\n`);
    });
    await cluster.start();
    prom = await startPrometheus({ binary: opts.prometheus, targetsFile: cluster.targetsFile, rulesFile });
    await prom.waitForTargets(cluster.instances.length, 60_000);
    const ruleGroups = await prom.ruleGroups();
    log(`cluster up (${cluster.instances.length} processes), prometheus ${prom.url} scraping them all; rule groups: ${ruleGroups.join(', ')}`);
    if (!ruleGroups.includes('almanac-capacity')) log('WARNING: no almanac-capacity rule group: the throughput series are missing and the query may answer nothing (counted as 0)');

    // --- 3. Capacity: the pool saturated for over two minutes, so its throughput is measured.
    const capacityTenant = await createBenchTenant(cluster.apiUrl, ADMIN, 'capacity');
    const c0 = Date.now();
    const capacityPostS = await postJobs(capacityTenant, 'capacity', opts.capacityJobs, c0);
    const ingestPerSecond = opts.capacityJobs / capacityPostS;
    log(`capacity: ${opts.capacityJobs.toLocaleString('en')} jobs due now posted in ${capacityPostS.toFixed(1)} s (${Math.round(ingestPerSecond).toLocaleString('en')} jobs/s); waiting for the drain`);
    const poolRate = (opts.workers * opts.concurrency * 1000) / opts.sleepMs;
    const capacityDeadline = Date.now() + Math.max(600_000, (3 * opts.capacityJobs * 1000) / poolRate);
    while (await busy(db)) {
      if (Date.now() > capacityDeadline) throw new Error('capacity phase: jobs still queued or running past its deadline');
      await sleep(2000);
    }
    const drainSeconds = (Date.now() - c0) / 1000;
    const capSpan = await attemptSpan(db, capacityTenant.id);
    const perReplicaFromAttempts = round(capSpan.n / ((capSpan.lastFinish - capSpan.firstStart) / 1000) / opts.workers, 2);
    // Two rule evaluations after the drain, so the last saturated minute is recorded.
    await sleep(30_000);
    const value = (expr: string) => prom!.query(expr).then((r) => (r.length ? r[0].value : null), () => null);
    const throughputRule = await value('max(pool:almanac_replica_throughput:per_second{pool="default"})');
    const defaultThroughput = await value('max(almanac_pool_default_throughput{pool="default"})');
    const saturatedSamples = (await value('sum(count_over_time(pool:almanac_executions_per_replica:saturated_rate1m{pool="default"}[1h]))')) ?? 0;
    const saturatedMedian = await value('max(quantile_over_time(0.5, pool:almanac_executions_per_replica:saturated_rate1m{pool="default"}[1h]))');
    const stands = throughputRule === null ? 'none' : saturatedSamples > 0 && throughputRule !== defaultThroughput ? 'measured' : 'default';
    const capacity: AutoscaleDoc['capacity'] = {
      jobs: opts.capacityJobs, postSeconds: round(capacityPostS), ingestPerSecond: Math.round(ingestPerSecond), drainSeconds: round(drainSeconds), perReplicaFromAttempts,
      throughputRule: roundOrNull(throughputRule), defaultThroughput, saturatedSamples, saturatedMedian: roundOrNull(saturatedMedian), stands,
    };
    log(`capacity: drained in ${drainSeconds.toFixed(0)} s, ${perReplicaFromAttempts} jobs/s per worker from job_attempts; ` +
      `pool:almanac_replica_throughput:per_second = ${capacity.throughputRule} (${stands}; default ${defaultThroughput}, ${saturatedSamples} saturated samples, median ${capacity.saturatedMedian})`);
    const throughputUsed = throughputRule ?? perReplicaFromAttempts;
    const neededReplicas = Math.ceil(opts.spike / (throughputUsed * so.windowSeconds));
    if (neededReplicas <= so.minReplicas) log(`WARNING: the spike needs ${neededReplicas} replicas, no more than the floor ${so.minReplicas}: nothing to show`);

    // --- 4 and 5. The spike due at T, the query polled from the first POST on.
    const spikeTenant = await createBenchTenant(cluster.apiUrl, ADMIN, 'spike');
    const floorAt = Date.now();
    const floorSample = await evaluate(prom, so, floorAt, so.minReplicas);
    // The margin lets the posting end before T − lead at the capacity phase's ingest rate (and half again).
    const marginMs = Math.max(30_000, ((opts.spike / ingestPerSecond) * 1500) + 10_000);
    const p0 = Date.now();
    const T = p0 + opts.leadMinutes * 60_000 + marginMs;
    const samples: AutoscaleSample[] = [];
    let stop = false;
    let timedOut = false;
    const floorPolls = Math.ceil((opts.floorMinutes * 60) / so.pollingSeconds);
    const polled = (async () => {
      const deadline = T + opts.timeoutMinutes * 60_000;
      for (let k = 0; !stop; k++) {
        const slot = p0 + k * so.pollingSeconds * 1000;
        if (Date.now() > slot + so.pollingSeconds * 1000) continue; // an evaluation ran long: skip the missed slot
        await sleep(Math.max(0, slot - Date.now()));
        const s = await evaluate(prom, so, T, samples[samples.length - 1]?.desired ?? floorSample.desired);
        samples.push(s);
        if (opts.verbose || k % 4 === 0) log(`T${s.atS >= 0 ? '+' : ''}${s.atS} s: value ${s.value ?? s.answer}, desired ${s.desired}, due ${JSON.stringify(s.due)}, backlog+in flight ${s.backlogInFlight}`);
        const atFloor = samples.slice(-floorPolls).filter((x) => x.atS > 0 && x.desired === so.minReplicas).length;
        if (s.atS > 0 && atFloor >= floorPolls && !(await busy(db))) return;
        if (Date.now() > deadline) {
          timedOut = true;
          return;
        }
      }
    })();
    // Settled at once, so a failed poll waits for the posting instead of crashing the process unhandled.
    const polling = polled.then(() => undefined, (err: unknown) => (err instanceof Error ? err : new Error(String(err))));
    let spikePostS: number;
    try {
      spikePostS = await postJobs(spikeTenant, 'spike', opts.spike, T);
    } catch (err) {
      stop = true;
      await polling;
      throw err;
    }
    const postEndBeforeWindowS = round((T - opts.leadMinutes * 60_000 - (p0 + spikePostS * 1000)) / 1000);
    log(`spike: ${opts.spike.toLocaleString('en')} jobs due at T = ${new Date(T).toISOString()} posted in ${spikePostS.toFixed(1)} s, ${postEndBeforeWindowS} s before T − ${opts.leadMinutes} min`);
    if (postEndBeforeWindowS < 0) log('WARNING: the posting ended after T − lead: the spike entered the window while still being posted');
    const pollError = await polling;
    if (pollError) throw pollError;
    if (timedOut) log(`WARNING: stopped polling ${opts.timeoutMinutes} min after T: not drained, or not back at the floor`);
    const spikeSpan = await attemptSpan(db, spikeTenant.id);
    const [{ succeeded }] = await db.query<{ succeeded: number }>(`SELECT count(*)::int AS succeeded FROM jobs WHERE tenant_id = $1 AND state = 'd'`, [spikeTenant.id]);

    // --- 6. Figures.
    const spike: AutoscaleDoc['spike'] = {
      jobs: opts.spike, dueAt: new Date(T).toISOString(), postStartS: round((p0 - T) / 1000), postSeconds: round(spikePostS), postEndBeforeWindowS,
      firstStartS: round((spikeSpan.firstStart - T) / 1000), lastFinishS: round((spikeSpan.lastFinish - T) / 1000), succeeded,
    };
    const firstAsk = samples.find((s) => s.desired >= neededReplicas);
    const askToT = firstAsk ? samples.filter((s) => s.atS >= firstAsk.atS && s.atS <= 0) : [];
    const afterT = samples.filter((s) => s.atS > 0);
    let floorFrom = afterT.length;
    while (floorFrom > 0 && afterT[floorFrom - 1].desired === so.minReplicas) floorFrom--;
    const backToFloor = floorFrom < afterT.length ? afterT[floorFrom] : undefined;
    const values = samples.flatMap((s) => (s.value === null ? [] : [s.value]));
    const summary: AutoscaleDoc['summary'] = {
      neededReplicas,
      throughputUsed: round(throughputUsed, 2),
      floorBefore: { value: floorSample.value, desired: floorSample.desired, atS: round((floorAt - T) / 1000) },
      firstAskBeforeTS: firstAsk ? round(-firstAsk.atS) : null,
      pollsBelowNeededBeforeT: askToT.filter((s) => s.desired < neededReplicas).length,
      minDesiredAskToT: askToT.length ? Math.min(...askToT.map((s) => s.desired)) : null,
      peakDesired: Math.max(...samples.map((s) => s.desired)),
      peakValue: values.length ? Math.max(...values) : null,
      backToFloorAfterTS: backToFloor ? backToFloor.atS : null,
      backToFloorAfterDrainS: backToFloor ? round(backToFloor.atS - spike.lastFinishS) : null,
      polls: samples.length,
      emptyAnswers: samples.filter((s) => s.answer === 'empty').length,
      errorAnswers: samples.filter((s) => s.answer === 'error').length,
    };
    const doc: AutoscaleDoc = {
      bench: 'autoscale', at: new Date().toISOString(), code: { root: opts.root, commit: checkoutInfo(opts.root).commit },
      inputs: { spike: opts.spike, leadMinutes: opts.leadMinutes, capacityJobs: opts.capacityJobs, workers: opts.workers, concurrency: opts.concurrency, sleepMs: opts.sleepMs, connections: opts.connections, floorMinutes: opts.floorMinutes },
      scaledObject: so, ruleGroups, capacity, spike, summary, samples,
    };

    const dir = join(ROOT, 'bench/charts');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'autoscale.svg'), lineChartSvg(autoscaleChart(doc)));
    const s = summary;
    process.stderr.write(
      '\n| figure | value |\n|---|---|\n' +
      `| ScaledObject (rendered) | min ${so.minReplicas}, max ${so.maxReplicas}, threshold ${so.threshold}, every ${so.pollingSeconds} s |\n` +
      `| throughput per replica the query divides by | ${capacity.throughputRule ?? 'no series'} jobs/s (${stands}; default ${defaultThroughput ?? 'no series'}; ${perReplicaFromAttempts} from job_attempts) |\n` +
      `| needed replicas for ${opts.spike.toLocaleString('en')} jobs | ${neededReplicas} |\n` +
      `| floor before the spike | desired ${s.floorBefore.desired} (value ${s.floorBefore.value ?? floorSample.answer}) |\n` +
      `| first ask ≥ needed, before T (target ≥ 300 s) | ${s.firstAskBeforeTS ?? 'never'} s |\n` +
      `| polls below needed between that ask and T (target 0) | ${s.pollsBelowNeededBeforeT} (lowest ${s.minDesiredAskToT ?? '—'}) |\n` +
      `| peak desired (value) | ${s.peakDesired} (${s.peakValue}) |\n` +
      `| back at the floor for good | ${s.backToFloorAfterTS === null ? 'not within the run' : `T+${s.backToFloorAfterTS} s, ${Math.abs(s.backToFloorAfterDrainS ?? 0)} s ${(s.backToFloorAfterDrainS ?? 0) < 0 ? 'before' : 'after'} the last spike job finished (T+${spike.lastFinishS} s)`} |\n` +
      `| spike | ${succeeded.toLocaleString('en')} of ${opts.spike.toLocaleString('en')} succeeded; posted in ${spike.postSeconds} s, ${postEndBeforeWindowS} s before T − ${opts.leadMinutes} min |\n` +
      `| answers | ${s.polls} polls, ${s.emptyAnswers} empty (counted as the floor), ${s.errorAnswers} errors |\n` +
      'chart: bench/charts/autoscale.svg\n',
    );
    process.stdout.write(`${JSON.stringify({
      ...doc,
      command: process.argv.slice(2),
      machine: { cpus: cpus().length, loadAverageBefore: load0.map((x) => round(x, 2)), loadAverageAfter: loadavg().map((x) => round(x, 2)) },
    })}\n`);
  } catch (err) {
    if (cluster) log(`cluster output, last lines:\n${cluster.lastLines()}`);
    if (prom) log(`prometheus log, last lines:\n${prom.logTail()}`);
    throw err;
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
