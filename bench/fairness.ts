/**
 * Fairness between tenants (issue 15 item 3): a noisy tenant's burst beside a quiet tenant,
 * through `npm run cluster`.
 *
 *   node -r ./bench/lib/register.cjs bench/fairness.ts [--runs 3] [--noisy 200000] [--quiet-seconds 60]
 *        [--sleep-ms 50] [--workers 2] [--connections 4] [--hz 10] [--label latest] [--root <checkout>]
 *        [--only shared,alone,weights,cap] [--cap-jobs 10000] [--co-load 0] [--verbose]
 *
 * `--co-load N` runs N busy-loop processes beside the bench for its whole length: a noisy
 * neighbour on this shared machine, made on purpose, so the figures can be compared with one.
 *
 * Each run starts Almanac as `npm run cluster` does: `node scripts/cluster.js --workers 2`
 * (api, promoter, dispatcher and the workers as separate processes from dist/; cluster.js builds
 * first when dist/ is older than the sources), pointed at a fresh database on
 * ALMANAC_BENCH_PG_URL (`almanac_bench_fairness_<random>`) and a private redis-server on a free
 * port; `--root` runs another checkout's cluster.js and dist/ (an A/B against an older commit).
 * Tenants are made and jobs posted through @almanac/client (`POST /v1/admin/tenants`,
 * `POST /v1/jobs/batch`); every job is a `noop` whose payload
 * `{"sleepMs": --sleep-ms}` gives the handler a duration, so "running jobs" means something.
 *
 * A warm-up (10,000 jobs through the same API, run and then truncated) warms the processes and
 * measures the ingest rate, from which the due instant T of each phase is chosen: loading ends
 * a few seconds before T, so every job is queued in Redis (hot queue) before it is due. Phases,
 * in alternating order from run to run (the tables are truncated in between):
 *
 * - shared: the quiet tenant's --quiet-seconds jobs (due T+0.5 s, T+1.5 s, …: 1 job/s, POSTed up
 *   front in one batch request), then the noisy tenant's --noisy jobs due at T (POST
 *   /v1/jobs/batch, 1,000 per request, --connections at once);
 * - alone: the same noisy burst without the quiet tenant.
 *
 * With the admin PATCH of issue 15 (`PATCH /v1/admin/tenants/:id`; skipped with a message where
 * it answers 404), once after the runs:
 * - weights: two noisy tenants with weights 1 and 3, --noisy / 2 jobs each, due at T;
 * - cap: a tenant with maxConcurrency 50 (--cap-jobs jobs) beside an uncapped one (--noisy / 2).
 *
 * Read back from Postgres (job_attempts joined to jobs): per tenant, lag = handler start −
 * run_at (p50 / p99 / max; the quiet tenant's also over the jobs due while the noisy backlog
 * drains), the noisy drain (T → last noisy attempt finished) and its jobs/s, the total jobs/s of
 * the shared phase over the same interval against the alone phase (the ratio), and running jobs
 * per tenant in 100 ms steps (mean occupancy from the attempt intervals; the highest count at
 * any instant from the exact intervals). Medians over --runs. SVG charts go to
 * bench/charts/fairness-<label>-*.svg (the median run). JSON on stdout, a table on stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { type AdminClient, createAdminClient, NotFoundError } from '@almanac/client';
import { type BenchTenant as Tenant, checkoutInfo, createBenchTenant, type JobBody, postInBatches } from './lib/bench-tenants';
import { type BenchDb, ClusterProcess, emptyDatabase } from './lib/cluster-process';
import { lineChartSvg, type Panel } from './lib/line-chart';
import { arg, median, ROOT, sleep, startRedis, type PrivateRedis } from './lib/local';

const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} fairness: ${msg}\n`);
const ADMIN = 'fairness-admin-token-0123456789';
const STEP_MS = 100;

const opts = {
  runs: Number(arg('runs', '3')),
  noisy: Number(arg('noisy', '200000')),
  quietSeconds: Number(arg('quiet-seconds', '60')),
  sleepMs: Number(arg('sleep-ms', '50')),
  workers: Number(arg('workers', '2')),
  connections: Number(arg('connections', '4')),
  hz: Number(arg('hz', '10')),
  capJobs: Number(arg('cap-jobs', '10000')),
  label: arg('label', 'latest'),
  root: arg('root', ROOT),
  only: arg('only', 'shared,alone,weights,cap').split(',').filter(Boolean),
  coLoad: Number(arg('co-load', '0')),
  verbose: process.argv.includes('--verbose'),
};

// ---------------------------------------------------------------------------------------------
// The API, through @almanac/client as a producer uses it.

const adminOf = (apiUrl: string): AdminClient => createAdminClient({ baseUrl: apiUrl, adminToken: ADMIN, timeoutMs: 60_000 });
const createTenant = (apiUrl: string, name: string): Promise<Tenant> => createBenchTenant(apiUrl, ADMIN, name);
const postJobs = (tenant: Tenant, jobs: JobBody[]): Promise<void> => postInBatches(tenant, jobs, opts.connections);

const burst = (tag: string, n: number, dueMs: number): JobBody[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'noop', key: `${tag}-${i}`, runAt: new Date(dueMs), payload: { sleepMs: opts.sleepMs } }));

// ---------------------------------------------------------------------------------------------
// Reading the durable record back.

interface Attempt { tenant: number; attempt: number; outcome: string; due: number; start: number; finish: number }

async function attempts(db: BenchDb, t0: number): Promise<Attempt[]> {
  // Milliseconds relative to T, so float8 keeps sub-millisecond precision.
  const rows: { tenant: number; attempt: number; outcome: string | null; due: number; start: number; finish: number | null }[] = await db.query(
    `SELECT j.tenant_id AS tenant, a.attempt, a.outcome,
            extract(epoch FROM j.run_at) * 1000 - $1 AS due,
            extract(epoch FROM a.started_at) * 1000 - $1 AS start,
            extract(epoch FROM a.finished_at) * 1000 - $1 AS finish
       FROM job_attempts a JOIN jobs j ON j.id = a.job_id`,
    [t0],
  );
  return rows.map((r) => ({ tenant: r.tenant, attempt: r.attempt, outcome: r.outcome ?? '', due: Number(r.due), start: Number(r.start), finish: Number(r.finish ?? r.start) }));
}

/** The largest value (-Infinity for none); Math.max(...xs) overflows the stack at 200,000 values. */
function maxOf(xs: number[]): number {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
}

/** percentile_cont: linear between the two nearest ranks. */
function pct(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const k = (sorted.length - 1) * p;
  const lo = Math.floor(k);
  return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (k - lo);
}

interface Lag { jobs: number; p50: number; p99: number; max: number }
function lagOf(xs: Attempt[]): Lag {
  const s = xs.map((a) => a.start - a.due).sort((a, b) => a - b);
  const r = (v: number) => Math.round(v * 10) / 10;
  return { jobs: s.length, p50: r(pct(s, 0.5)), p99: r(pct(s, 0.99)), max: r(s[s.length - 1] ?? NaN) };
}

/** The most attempts running at any one instant (a finish at t ends before a start at t). */
function maxRunning(xs: Attempt[]): number {
  const ev: [number, number][] = [];
  for (const a of xs) ev.push([a.start, 1], [a.finish, -1]);
  ev.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let n = 0;
  let most = 0;
  for (const [, d] of ev) most = Math.max(most, (n += d));
  return most;
}

/** Mean running attempts per STEP_MS step from `from` to `to` (ms after T): overlap of each interval with each step. */
function runningSeries(xs: Attempt[], from: number, to: number): number[] {
  const steps = Math.ceil((to - from) / STEP_MS);
  const bins = new Float64Array(steps);
  for (const a of xs) {
    for (let k = Math.max(0, Math.floor((a.start - from) / STEP_MS)); k < steps && from + k * STEP_MS < a.finish; k++) {
      const lo = Math.max(a.start, from + k * STEP_MS);
      const hi = Math.min(a.finish, from + (k + 1) * STEP_MS);
      if (hi > lo) bins[k] += (hi - lo) / STEP_MS;
    }
  }
  return Array.from(bins, (v) => Math.round(v * 10) / 10);
}

interface TenantResult {
  name: string;
  id: number;
  jobs: number;
  succeeded: number;
  attemptsBeyondFirst: number;
  lagMs: Lag;
  /** Quiet tenant only: its jobs due before the noisy backlog had drained. */
  lagDuringDrainMs?: Lag;
  /** Last attempt finished, s after T (the drain, for a burst due at T). */
  lastFinishS: number;
  jobsPerSecond: number;
  maxRunning: number;
  weight?: number;
  maxConcurrency?: number;
}

interface PhaseResult {
  scenario: string;
  dueAt: string;
  loadSeconds: number;
  /** How long before T the load had finished (negative: jobs were still being posted at T). */
  loadEndBeforeDueMs: number;
  tenants: TenantResult[];
  /** Every job that finished by the end of the burst's drain, per second of that drain. */
  totalJobsPerSecond: number;
  drainSeconds: number;
  /** Share of the running jobs (mean occupancy) per tenant while every burst tenant still had work. */
  runningShare?: Record<string, number>;
  series: { fromMs: number; stepMs: number; running: Record<string, number[]>; quietLag?: [number, number][] };
}

interface PhaseTenant { tenant: Tenant; jobs: number; dueOffsets: (i: number) => number; burst: boolean; weight?: number; maxConcurrency?: number }

async function truncate(db: BenchDb): Promise<void> {
  await db.query('TRUNCATE jobs, job_attempts');
  // The old road (an A/B with --root) also parked rows in dispatch_backlog.
  await db.query(`DO $$ BEGIN IF to_regclass('dispatch_backlog') IS NOT NULL THEN TRUNCATE dispatch_backlog; END IF; END $$`);
}

/**
 * One phase: the given tenants' jobs posted (non-burst tenants first, each in batches), due at
 * T + their offsets; waits for every job to finish; reads the record back.
 */
async function phase(scenario: string, db: BenchDb, ingestPerSecond: number, tag: string, members: PhaseTenant[]): Promise<PhaseResult> {
  const total = members.reduce((n, m) => n + m.jobs, 0);
  // Loading ends ~3 s before T at the warm-up's rate (with half again as margin).
  const T = Date.now() + Math.max(4000, (total / ingestPerSecond) * 1500 + 3000);
  const ordered = [...members].sort((a, b) => Number(a.burst) - Number(b.burst));
  const l0 = Date.now();
  for (const m of ordered) {
    const jobs = Array.from({ length: m.jobs }, (_, i): JobBody => ({ kind: 'noop', key: `${tag}-${m.tenant.name}-${i}`, runAt: new Date(T + m.dueOffsets(i)), payload: { sleepMs: opts.sleepMs } }));
    await postJobs(m.tenant, jobs);
  }
  const loadEnd = Date.now();
  const loadEndBeforeDueMs = T - loadEnd;
  log(`${scenario}: ${total.toLocaleString('en')} jobs posted in ${((loadEnd - l0) / 1000).toFixed(1)} s, ${(loadEndBeforeDueMs / 1000).toFixed(1)} s before T`);
  if (loadEndBeforeDueMs < 500) log(`${scenario}: WARNING: the load ended only ${loadEndBeforeDueMs} ms before T: some jobs were not queued ahead of their time`);
  const ids = members.map((m) => m.tenant.id);
  const lastDue = Math.max(...members.map((m) => m.dueOffsets(m.jobs - 1)));
  const deadline = T + lastDue + 600_000;
  for (;;) {
    await sleep(500);
    if (Date.now() < T + lastDue) continue;
    const [{ busy }] = await db.query(
      `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'q' AND tenant_id = ANY($1)) OR EXISTS (SELECT 1 FROM jobs WHERE state = 'r' AND tenant_id = ANY($1)) AS busy`,
      [ids],
    );
    if (!busy) break;
    if (Date.now() > deadline) throw new Error(`${scenario}: jobs still queued or running 600 s after the last was due`);
  }
  await sleep(1000); // the last group commits of attempt rows
  const all = (await attempts(db, T)).filter((a) => ids.includes(a.tenant));
  const [{ states }] = await db.query(`SELECT json_object_agg(tenant_id::text || ':' || state::text, n) AS states FROM (SELECT tenant_id, state, count(*)::int AS n FROM jobs GROUP BY 1, 2) s`);
  const stateCount = states as Record<string, number>;
  const ran = all.filter((a) => a.outcome !== 'lost');
  const bursts = members.filter((m) => m.burst);
  const drainEnd = maxOf(ran.filter((a) => bursts.some((b) => b.tenant.id === a.tenant)).map((a) => a.finish));
  const tenants: TenantResult[] = members.map((m) => {
    const mine = ran.filter((a) => a.tenant === m.tenant.id);
    const firsts = mine.filter((a) => a.attempt === 1);
    const last = maxOf(mine.map((a) => a.finish));
    const firstDue = -maxOf(firsts.map((a) => -a.due));
    const r: TenantResult = {
      name: m.tenant.name, id: m.tenant.id, jobs: m.jobs,
      succeeded: stateCount[`${m.tenant.id}:d`] ?? 0,
      attemptsBeyondFirst: all.filter((a) => a.tenant === m.tenant.id && a.attempt > 1).length,
      lagMs: lagOf(firsts),
      lastFinishS: Math.round(last) / 1000,
      jobsPerSecond: Math.round(mine.length / ((last - firstDue) / 1000)),
      maxRunning: maxRunning(mine),
      ...(m.weight !== undefined ? { weight: m.weight } : {}),
      ...(m.maxConcurrency !== undefined ? { maxConcurrency: m.maxConcurrency } : {}),
    };
    if (!m.burst) r.lagDuringDrainMs = lagOf(firsts.filter((a) => a.due <= drainEnd));
    return r;
  });
  const fromMs = -1000;
  const toMs = maxOf(ran.map((a) => a.finish)) + 1000;
  const running: Record<string, number[]> = {};
  for (const m of members) running[m.tenant.name] = runningSeries(ran.filter((a) => a.tenant === m.tenant.id), fromMs, toMs);
  const finishedInDrain = ran.filter((a) => a.finish <= drainEnd).length;
  const result: PhaseResult = {
    scenario, dueAt: new Date(T).toISOString(), loadSeconds: (loadEnd - l0) / 1000, loadEndBeforeDueMs,
    tenants, drainSeconds: Math.round(drainEnd) / 1000, totalJobsPerSecond: Math.round(finishedInDrain / (drainEnd / 1000)),
    series: { fromMs, stepMs: STEP_MS, running },
  };
  const quiet = members.find((m) => !m.burst);
  if (quiet) {
    result.series.quietLag = ran.filter((a) => a.tenant === quiet.tenant.id && a.attempt === 1).map((a) => [Math.round(a.due) / 1000, Math.round((a.start - a.due) * 10) / 10]);
  }
  if (bursts.length > 1) {
    // While every burst tenant still had work: from T + 0.5 s until the first of them drained.
    const until = Math.min(...tenants.filter((t) => bursts.some((b) => b.tenant.id === t.id)).map((t) => t.lastFinishS * 1000));
    const k0 = Math.floor((500 - fromMs) / STEP_MS);
    const k1 = Math.floor((until - fromMs) / STEP_MS);
    const sums = bursts.map((b) => running[b.tenant.name].slice(k0, k1).reduce((x, y) => x + y, 0));
    const sum = sums.reduce((x, y) => x + y, 0);
    result.runningShare = Object.fromEntries(bursts.map((b, i) => [b.tenant.name, Math.round((sums[i] / sum) * 1000) / 1000]));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

function describe(p: PhaseResult): string {
  const parts = p.tenants.map((t) => {
    const lag = `lag p50 ${t.lagMs.p50} / p99 ${t.lagMs.p99} / max ${t.lagMs.max} ms`;
    const during = t.lagDuringDrainMs ? ` (due during the drain: ${t.lagDuringDrainMs.jobs} jobs, p99 ${t.lagDuringDrainMs.p99} ms)` : '';
    return `${t.name}: ${t.succeeded}/${t.jobs} succeeded, ${lag}${during}, last finished T+${t.lastFinishS} s, most running ${t.maxRunning}`;
  });
  const share = p.runningShare ? `; running share ${JSON.stringify(p.runningShare)}` : '';
  return `${p.scenario}: drain ${p.drainSeconds} s, ${p.totalJobsPerSecond} jobs/s${share}\n    ${parts.join('\n    ')}`;
}

const COLORS = { noisy: '#e45756', quiet: '#4c78a8', alone: '#bbbbbb', a: '#f58518', b: '#54a24b' };

function charts(label: string, shared: PhaseResult | undefined, alone: PhaseResult | undefined, extras: PhaseResult[]): string[] {
  const dir = join(ROOT, 'bench/charts');
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const pts = (p: PhaseResult, name: string): [number, number][] => (p.series.running[name] ?? []).map((v, k) => [(p.series.fromMs + (k + 0.5) * p.series.stepMs) / 1000, v]);
  if (shared) {
    const noisy = shared.tenants.find((t) => t.name === 'noisy');
    const panels: Panel[] = [{
      unit: 'running jobs',
      series: [
        ...(alone ? [{ label: 'noisy, alone (no quiet tenant)', color: COLORS.alone, points: pts(alone, 'noisy'), dashed: true }] : []),
        { label: 'noisy, beside the quiet tenant', color: COLORS.noisy, points: pts(shared, 'noisy') },
      ],
    }, {
      unit: 'running jobs',
      series: [{ label: 'quiet (1 job/s)', color: COLORS.quiet, points: pts(shared, 'quiet') }],
    }, {
      unit: 'quiet lag ms',
      series: [{ label: 'quiet tenant: handler start − run_at, per job (by due time)', color: COLORS.quiet, points: shared.series.quietLag ?? [], dots: true }],
      target: { value: 100, label: 'target p99 100 ms' },
      yMax: Math.max(200, ...(shared.series.quietLag ?? []).map(([, v]) => v)) > 1000 ? undefined : 200,
    }];
    const file = `fairness-${label}-running.svg`;
    writeFileSync(join(dir, file), lineChartSvg({
      title: `Running jobs per tenant: ${noisy?.jobs.toLocaleString('en')} noisy jobs due at T, quiet 1 job/s (${label})`,
      xUnit: `seconds after T (mean running jobs per ${STEP_MS} ms step, from job_attempts)`,
      panels,
      markers: [{ x: 0, label: 'T' }, { x: shared.drainSeconds, label: 'noisy drained' }],
    }));
    written.push(file);
  }
  for (const p of extras) {
    const names = p.tenants.map((t) => t.name);
    const file = `fairness-${label}-${p.scenario}.svg`;
    const caption = (t: TenantResult) => `${t.name}${t.weight !== undefined ? ` (weight ${t.weight})` : ''}${t.maxConcurrency !== undefined ? ` (maxConcurrency ${t.maxConcurrency})` : ''}`;
    writeFileSync(join(dir, file), lineChartSvg({
      title: p.scenario === 'weights' ? `Two noisy tenants, weights 1 and 3: running jobs (${label})` : `A tenant capped at maxConcurrency 50 beside an uncapped one (${label})`,
      xUnit: `seconds after T (mean running jobs per ${STEP_MS} ms step)`,
      panels: [{
        unit: 'running jobs',
        series: p.tenants.map((t, i) => ({ label: caption(t), color: [COLORS.a, COLORS.b][i % 2], points: pts(p, names[i]) })),
        ...(p.scenario === 'cap' ? { target: { value: 50, label: 'maxConcurrency 50' } } : {}),
      }],
      markers: [{ x: 0, label: 'T' }],
    }));
    written.push(file);
  }
  return written;
}

function spreadOf(xs: number[]): { median: number; min: number; max: number; runs: number[] } {
  const f = xs.filter(Number.isFinite);
  return { median: f.length ? median(f) : NaN, min: Math.min(...f), max: Math.max(...f), runs: xs };
}

/** N processes that spin for the bench's length (--co-load): a noisy neighbour made on purpose. */
function startCoLoad(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

async function main(): Promise<void> {
  const coLoad = startCoLoad(opts.coLoad);
  try {
    await measure();
  } finally {
    for (const p of coLoad) p.kill('SIGKILL');
  }
}

async function measure(): Promise<void> {
  const load0 = loadavg();
  const code = checkoutInfo(opts.root);
  log(`cluster from ${opts.root} (${code.commit}${code.dirty ? ', uncommitted changes in apps/ or libs/' : ''}); ${opts.runs} run(s), ${opts.noisy.toLocaleString('en')} noisy jobs, handler ${opts.sleepMs} ms, ${opts.workers} workers`);
  const runs: { run: number; order: string[]; shared?: PhaseResult; alone?: PhaseResult; ratio?: number }[] = [];
  const extras: PhaseResult[] = [];
  let extrasSkipped: string | undefined;
  for (let run = 1; run <= opts.runs; run++) {
    const db = await emptyDatabase('almanac_bench_fairness');
    let redis: PrivateRedis | undefined;
    let cluster: ClusterProcess | undefined;
    try {
      redis = await startRedis(opts.hz);
      cluster = new ClusterProcess(opts.root, opts.workers, {
        NODE_ENV: 'production', DATABASE_URL: db.url, REDIS_URL: redis.url, ALMANAC_ADMIN_TOKEN: ADMIN,
        ALMANAC_RATE_LIMIT_PER_SECOND: '0', ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '0', ALMANAC_LOG_LEVEL: process.env.ALMANAC_LOG_LEVEL ?? 'warn',
      }, (line) => {
        // cluster.js's own lines ([almanac] …: build, migrations, warnings) and, with --verbose, the roles'.
        if (opts.verbose || line.startsWith('[almanac]')) process.stderr.write(`  cluster | ${line}\n`);
      }, process.env.FAIRNESS_LOG_DIR);
      await cluster.start();
      const api = cluster.apiUrl;
      log(`run ${run}: cluster up (${cluster.instances.map((i) => `${i.name} ${i.pid}`).join(', ')})`);
      // Warm-up: the same path at a tenth of the size; its ingest rate sets how far ahead T goes.
      const warm = await createTenant(api, 'warm-up');
      const w0 = Date.now();
      const warmJobs = Math.min(10_000, opts.noisy);
      await postJobs(warm, burst('warm', warmJobs, Date.now() + 1000));
      const ingestPerSecond = warmJobs / ((Date.now() - w0) / 1000);
      for (;;) {
        await sleep(500);
        const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM jobs WHERE state IN ('q', 'r')`);
        if (n === 0) break;
      }
      await sleep(1000);
      await truncate(db);
      log(`run ${run}: warm-up done (ingest ${Math.round(ingestPerSecond).toLocaleString('en')} jobs/s)`);
      const noisy = await createTenant(api, 'noisy');
      const quiet = await createTenant(api, 'quiet');
      const noisyBurst: PhaseTenant = { tenant: noisy, jobs: opts.noisy, dueOffsets: () => 0, burst: true };
      const quietTrickle: PhaseTenant = { tenant: quiet, jobs: opts.quietSeconds, dueOffsets: (i) => 500 + i * 1000, burst: false };
      const order = run % 2 ? ['shared', 'alone'] : ['alone', 'shared'];
      const r: (typeof runs)[number] = { run, order: order.filter((o) => opts.only.includes(o)) };
      for (const scenario of r.order) {
        const p = await phase(scenario, db, ingestPerSecond, `r${run}-${scenario}`, scenario === 'shared' ? [quietTrickle, noisyBurst] : [noisyBurst]);
        log(describe(p));
        if (scenario === 'shared') r.shared = p;
        else r.alone = p;
        await truncate(db);
      }
      if (r.shared && r.alone) r.ratio = Math.round((r.shared.totalJobsPerSecond / r.alone.totalJobsPerSecond) * 1000) / 1000;
      runs.push(r);
      if (run === opts.runs && (opts.only.includes('weights') || opts.only.includes('cap'))) {
        // A failure here keeps the runs above: it is reported, not thrown.
        try {
          const admin = adminOf(api);
          const probe = await admin.tenants.update(noisy.id, { weight: 1 }).catch((err: unknown) => {
            if (err instanceof NotFoundError) return err;
            throw err;
          });
          if (probe instanceof NotFoundError) {
            extrasSkipped = `PATCH /v1/admin/tenants/:id answered 404 (${probe.message}): no per-tenant weights or limits in this build; the weights and cap scenarios are skipped`;
            log(extrasSkipped);
          } else {
            if (opts.only.includes('weights')) {
              const a = await createTenant(api, 'weight-1');
              const b = await createTenant(api, 'weight-3');
              for (const [t, weight] of [[a, 1], [b, 3]] as const) await admin.tenants.update(t.id, { weight });
              const half = Math.floor(opts.noisy / 2);
              const p = await phase('weights', db, ingestPerSecond, 'weights', [
                { tenant: a, jobs: half, dueOffsets: () => 0, burst: true, weight: 1 },
                { tenant: b, jobs: half, dueOffsets: () => 0, burst: true, weight: 3 },
              ]);
              log(describe(p));
              extras.push(p);
              await truncate(db);
            }
            if (opts.only.includes('cap')) {
              const capped = await createTenant(api, 'capped');
              const free = await createTenant(api, 'uncapped');
              await admin.tenants.update(capped.id, { maxConcurrency: 50 });
              const p = await phase('cap', db, ingestPerSecond, 'cap', [
                { tenant: capped, jobs: opts.capJobs, dueOffsets: () => 0, burst: true, maxConcurrency: 50 },
                { tenant: free, jobs: Math.floor(opts.noisy / 2), dueOffsets: () => 0, burst: true },
              ]);
              log(describe(p));
              extras.push(p);
            }
          }
        } catch (err) {
          extrasSkipped = `failed: ${(err as Error).message}`;
          log(`weights / cap ${extrasSkipped}`);
          await truncate(db).catch(() => undefined);
        }
      }
    } catch (err) {
      if (cluster) log(`cluster output, last lines:\n${cluster.lastLines()}`);
      throw err;
    } finally {
      await cluster?.stop().catch(() => undefined);
      await redis?.stop().catch(() => undefined);
      await db.drop().catch(() => undefined);
    }
  }

  const quietT = (r: (typeof runs)[number]) => r.shared?.tenants.find((t) => t.name === 'quiet');
  const noisyT = (p?: PhaseResult) => p?.tenants.find((t) => t.name === 'noisy');
  const summary = {
    quietLagP50Ms: spreadOf(runs.map((r) => quietT(r)?.lagMs.p50 ?? NaN)),
    quietLagP99Ms: spreadOf(runs.map((r) => quietT(r)?.lagMs.p99 ?? NaN)),
    quietLagMaxMs: spreadOf(runs.map((r) => quietT(r)?.lagMs.max ?? NaN)),
    quietLagP99DuringDrainMs: spreadOf(runs.map((r) => quietT(r)?.lagDuringDrainMs?.p99 ?? NaN)),
    quietJobsDueDuringDrain: spreadOf(runs.map((r) => quietT(r)?.lagDuringDrainMs?.jobs ?? NaN)),
    noisyLagP99Ms: spreadOf(runs.map((r) => noisyT(r.shared)?.lagMs.p99 ?? NaN)),
    drainSharedS: spreadOf(runs.map((r) => r.shared?.drainSeconds ?? NaN)),
    drainAloneS: spreadOf(runs.map((r) => r.alone?.drainSeconds ?? NaN)),
    jobsPerSecondShared: spreadOf(runs.map((r) => r.shared?.totalJobsPerSecond ?? NaN)),
    jobsPerSecondAlone: spreadOf(runs.map((r) => r.alone?.totalJobsPerSecond ?? NaN)),
    throughputRatio: spreadOf(runs.map((r) => r.ratio ?? NaN)),
  };
  // Chart the run whose shared drain is the median one.
  const byDrain = [...runs].filter((r) => r.shared).sort((a, b) => (a.shared?.drainSeconds ?? 0) - (b.shared?.drainSeconds ?? 0));
  const charted = byDrain[(byDrain.length - 1) >> 1] ?? runs[0];
  const chartFiles = charts(opts.label, charted?.shared, charted?.alone, extras);
  // Series are kept for the charted run only (the JSON stays small).
  for (const r of runs) {
    if (r === charted) continue;
    for (const p of [r.shared, r.alone]) if (p) p.series = { ...p.series, running: {}, quietLag: undefined };
  }
  for (const r of runs) {
    const q = quietT(r);
    log(`run ${r.run} (${r.order.join(' then ')}): quiet lag p99 ${q?.lagMs.p99} ms (during drain ${q?.lagDuringDrainMs?.p99} ms), drain ${r.shared?.drainSeconds} s shared / ${r.alone?.drainSeconds} s alone, ` +
      `${r.shared?.totalJobsPerSecond} / ${r.alone?.totalJobsPerSecond} jobs/s, ratio ${r.ratio}`);
  }
  const f = (s: { median: number; min: number; max: number }, unit: string) => `${s.median} ${unit} (${s.min}–${s.max})`;
  process.stderr.write(
    `\n| figure (median of ${runs.length}) | value (min–max) |\n|---|---|\n` +
    `| quiet lag p50 / p99 / max | ${summary.quietLagP50Ms.median} / ${f(summary.quietLagP99Ms, 'ms')} / ${summary.quietLagMaxMs.median} ms |\n` +
    `| quiet lag p99, jobs due while the noisy backlog drained | ${f(summary.quietLagP99DuringDrainMs, 'ms')} |\n` +
    `| noisy drain, beside quiet / alone | ${f(summary.drainSharedS, 's')} / ${f(summary.drainAloneS, 's')} |\n` +
    `| jobs/s, beside quiet / alone | ${f(summary.jobsPerSecondShared, '')} / ${f(summary.jobsPerSecondAlone, '')} |\n` +
    `| throughput ratio (shared / alone) | ${f(summary.throughputRatio, '×')} |\n` +
    extras.map((p) => `| ${p.scenario} | ${p.runningShare ? `running share ${JSON.stringify(p.runningShare)}; ` : ''}${p.tenants.map((t) => `${t.name} most running ${t.maxRunning}, ${t.succeeded}/${t.jobs} succeeded`).join('; ')} |\n`).join('') +
    (extrasSkipped ? `| weights, cap | skipped: ${extrasSkipped} |\n` : '') +
    `charts: ${chartFiles.map((c) => `bench/charts/${c}`).join(', ')}\n`,
  );
  process.stdout.write(`${JSON.stringify({
    bench: 'fairness', at: new Date().toISOString(), label: opts.label, command: process.argv.slice(2),
    code: { root: opts.root, ...code },
    machine: {
      cpus: cpus().length, loadAverageBefore: load0.map((x) => Math.round(x * 100) / 100), loadAverageAfter: loadavg().map((x) => Math.round(x * 100) / 100),
      ...(opts.coLoad > 0 ? { coLoad: `${opts.coLoad} busy-loop process(es) beside the bench throughout (--co-load)` } : {}),
    },
    inputs: { runs: opts.runs, noisyJobs: opts.noisy, quietJobs: opts.quietSeconds, quietRatePerSecond: 1, handlerSleepMs: opts.sleepMs, workers: opts.workers, connections: opts.connections, redisHz: opts.hz, capJobs: opts.capJobs, only: opts.only },
    summary, runs, extras, extrasSkipped: extrasSkipped ?? null, charts: chartFiles,
  })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
