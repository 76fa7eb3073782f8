/**
 * The fairness section of bench/REPORT.md (issue 15 item 3), from the fairness results in
 * bench/results/ (`<date>-fairness-<label>.json`: what bench/run.ts writes for the part, or
 * bench/fairness.ts's own JSON saved there). One column per label (e.g. `before` and `after`),
 * newest result of each label, so a before/after comparison stays readable; the charts are the
 * SVGs bench/fairness.ts wrote (bench/charts/fairness-<label>-*.svg). The section is replaced in
 * place (or appended) after report-md.ts has regenerated the rest of the report.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, RESULTS_DIR, writeResult, type Figure, type PartResult } from './report-env';

interface Spread { median: number; min: number; max: number; runs: number[] }

interface TenantDoc { name: string; jobs: number; succeeded: number; maxRunning: number; lastFinishS: number; weight?: number; maxConcurrency?: number; lagMs: { p99: number } }
interface PhaseDoc { scenario: string; drainSeconds: number; totalJobsPerSecond: number; runningShare?: Record<string, number>; tenants: TenantDoc[] }

/** bench/fairness.ts's JSON document (the part's `raw`). */
export interface FairnessDoc {
  bench: 'fairness';
  at: string;
  label: string;
  command?: string[];
  code: { root: string; commit: string; dirty: boolean | null };
  machine?: { cpus: number; loadAverageBefore: number[]; loadAverageAfter: number[]; coLoad?: string };
  inputs: { runs: number; noisyJobs: number; quietJobs: number; handlerSleepMs: number; workers: number; connections: number; redisHz: number };
  summary: Record<'quietLagP50Ms' | 'quietLagP99Ms' | 'quietLagMaxMs' | 'quietLagP99DuringDrainMs' | 'quietJobsDueDuringDrain' | 'noisyLagP99Ms' | 'drainSharedS' | 'drainAloneS' | 'jobsPerSecondShared' | 'jobsPerSecondAlone' | 'throughputRatio', Spread>;
  extras: PhaseDoc[];
  extrasSkipped: string | null;
  charts: string[];
  /** Set when read back: the results file it came from. */
  file?: string;
}

const QUIET_P99_TARGET = 100;
const RATIO_TARGET = 0.9;

/** The run.ts figures of one fairness document (targets from issue 15). */
export function fairnessFigures(d: FairnessDoc): Figure[] {
  const s = d.summary;
  const fig = (name: string, x: Spread, unit: string, target = '', ok?: (v: number) => boolean): Figure => ({
    name, median: x.median, min: x.min, max: x.max, runs: x.runs.length, unit, target, status: ok ? (ok(x.median) ? 'met' : 'short') : 'n/a',
  });
  return [
    fig(`quiet tenant lag p99 while ${d.inputs.noisyJobs.toLocaleString('en')} noisy jobs drain (quiet jobs due during the drain)`, s.quietLagP99DuringDrainMs, 'ms', '≤ 100 ms (aim ≤ 25 ms)', (v) => v <= QUIET_P99_TARGET),
    fig('quiet tenant lag p99, all its jobs over the minute', s.quietLagP99Ms, 'ms', '≤ 100 ms (aim ≤ 25 ms)', (v) => v <= QUIET_P99_TARGET),
    fig('quiet tenant lag p50', s.quietLagP50Ms, 'ms'),
    fig('quiet tenant lag max', s.quietLagMaxMs, 'ms'),
    fig('noisy tenant lag p99 (its last job: ≈ the drain)', s.noisyLagP99Ms, 'ms'),
    fig('noisy drain (T → last noisy job finished), beside the quiet tenant', s.drainSharedS, 's'),
    fig('noisy drain, alone', s.drainAloneS, 's'),
    fig('total jobs/s over the drain, beside the quiet tenant', s.jobsPerSecondShared, 'jobs/s'),
    fig('jobs/s, the same drain alone', s.jobsPerSecondAlone, 'jobs/s'),
    fig('throughput beside the quiet tenant / alone', s.throughputRatio, '×', '≥ 0.9 × (within 10 %)', (v) => v >= RATIO_TARGET),
  ];
}

/** Writes a run.ts result as `<date>-fairness-<label>[-quick].json`, so a before and an after of one day both stay. */
export function writeFairnessResult(r: PartResult): string {
  const label = (r.raw as FairnessDoc).label.replace(/[^a-z0-9_-]/gi, '_');
  return writeResult({ ...r, part: `fairness-${label}` });
}

function readDocs(): FairnessDoc[] {
  if (!existsSync(RESULTS_DIR)) return [];
  const docs: FairnessDoc[] = [];
  for (const f of readdirSync(RESULTS_DIR).filter((x) => /-fairness-.*\.json$/.test(x))) {
    try {
      const j = JSON.parse(readFileSync(join(RESULTS_DIR, f), 'utf8')) as FairnessDoc | PartResult;
      const doc = ('bench' in j ? j : j.raw) as FairnessDoc;
      if (doc?.bench === 'fairness') docs.push({ ...doc, file: f });
    } catch {
      // not a fairness result
    }
  }
  return docs;
}

const n = (v: number, unit: string): string => {
  if (!Number.isFinite(v)) return '—';
  const s = Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en') : String(Math.round(v * 100) / 100);
  return unit ? `${s} ${unit}` : s;
};
const cell = (f: Figure): string => (f.runs > 1 ? `${n(f.median, f.unit)} (${n(f.min, '')}–${n(f.max, '')})` : n(f.median, f.unit));

export function fairnessSection(): string[] {
  const all = readDocs();
  const full = all.filter((d) => d.inputs.noisyJobs >= 100_000);
  const pool = full.length ? full : all;
  // The newest result of each label, oldest label first.
  const newest = new Map<string, FairnessDoc>();
  for (const d of pool.sort((a, b) => a.at.localeCompare(b.at))) newest.set(d.label, d);
  const docs = [...newest.values()].sort((a, b) => a.at.localeCompare(b.at));
  const lines = ['## fairness', '', '**Fair delivery between tenants: a noisy tenant\'s burst beside a quiet tenant (issue 15)**', ''];
  lines.push('<!-- generated by bench/lib/report-fairness.ts from bench/results/*-fairness-*.json -->', '');
  if (!docs.length) return [...lines, 'Not run yet: `npm run bench -- fairness`.', ''];
  const head = docs.map((d) => `${d.label} (${d.code.commit}${d.code.dirty ? ' + uncommitted' : ''}, ${d.at.slice(0, 16).replace('T', ' ')} UTC)`);
  lines.push(`| figure | target | ${head.join(' | ')} |`, `|---|---|${docs.map(() => '---|').join('')}`);
  const last = docs[docs.length - 1];
  const rows = fairnessFigures(last).map((f, i) => ({ f, i }));
  for (const { f, i } of rows) {
    const cells = docs.map((d) => {
      const g = fairnessFigures(d)[i];
      const mark = g.status === 'short' ? ' **short**' : g.status === 'met' ? ' met' : '';
      return `${cell(g)}${mark}`;
    });
    lines.push(`| ${f.name} | ${f.target || '—'} | ${cells.join(' | ')} |`);
  }
  lines.push('', 'Each cell: median of the runs (min–max). Lag = handler start (job_attempts.started_at) − run_at, from Postgres after the run.', '');
  for (const d of docs) {
    const s = d.summary;
    const waits = s.quietLagP99DuringDrainMs.median >= 0.5 * s.drainSharedS.median * 1000;
    lines.push(`- **${d.label}**: the quiet tenant's jobs due during the ${n(s.drainSharedS.median, 's')} drain started ${n(s.quietLagP99DuringDrainMs.median, 'ms')} late at p99 ` +
      `(${waits ? 'about the whole drain: they waited behind the noisy backlog' : `${Math.round((s.quietLagP99DuringDrainMs.median / (s.drainSharedS.median * 1000)) * 100)} % of the drain`}); ` +
      `the drain ran at ${n(s.throughputRatio.median, '×')} the jobs/s of the same drain alone.`);
  }
  lines.push('', 'What the charts show, and what is left to do: bench/README.md, section "Fairness between tenants".', '');
  for (const d of docs) {
    lines.push(`### ${d.label}`, '');
    for (const c of d.charts) lines.push(`![${d.label}: ${c}](charts/${c})`, '');
    for (const e of d.extras) {
      const tenants = e.tenants.map((t) => `${t.name}${t.weight !== undefined ? ` (weight ${t.weight})` : ''}${t.maxConcurrency !== undefined ? ` (maxConcurrency ${t.maxConcurrency})` : ''}: ${t.succeeded.toLocaleString('en')} of ${t.jobs.toLocaleString('en')} succeeded, most running at once ${t.maxRunning}, last finished T+${t.lastFinishS} s, lag p99 ${n(t.lagMs.p99, 'ms')}`);
      const share = e.runningShare ? ` Running share while both had work: ${Object.entries(e.runningShare).map(([k, v]) => `${k} ${(v * 100).toFixed(1)} %`).join(', ')}.` : '';
      lines.push(`- **${e.scenario}** (one run): ${tenants.join('; ')}.${share}`);
    }
    if (d.extrasSkipped) lines.push(`- weights and cap scenarios: skipped (${d.extrasSkipped.replace(/\s*\(\{.*?\}\)/, '')}).`);
    const i = d.inputs;
    const cmd = d.command ? `node -r ./bench/lib/register.cjs bench/fairness.ts ${d.command.join(' ')}` : 'bench/fairness.ts';
    lines.push(
      `- Command: \`flock /tmp/almanac-bench.lock ${cmd}\`; cluster from \`${d.code.root}\` (${d.code.commit}). Inputs: ${i.runs} run(s), ${i.noisyJobs.toLocaleString('en')} noisy jobs due at T, ${i.quietJobs} quiet jobs due T+0.5 s … 1/s, noop handler ${i.handlerSleepMs} ms, ${i.workers} worker processes (concurrency 200 each), ${i.connections} ingest connections, Redis hz ${i.redisHz}.` +
        (d.machine ? ` Machine: ${d.machine.cpus} cores, load average ${d.machine.loadAverageBefore.join(' / ')} before, ${d.machine.loadAverageAfter.join(' / ')} after${d.machine.coLoad ? `; ${d.machine.coLoad}` : ''}.` : '') +
        ` Raw: \`bench/results/${d.file}\`.`,
      '',
    );
  }
  return lines;
}

/** Replaces the fairness section of bench/REPORT.md (from `## fairness` to the next `## ` or the end), or appends it. */
export function writeFairnessSection(): string {
  const path = join(BENCH_DIR, 'REPORT.md');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const section = fairnessSection().join('\n');
  const start = text.search(/^## fairness$/m);
  let out: string;
  if (start < 0) {
    out = `${text.replace(/\n*$/, '')}\n\n${section}`;
  } else {
    const rest = text.slice(start + 1);
    const next = rest.search(/^## (?!fairness$)/m);
    out = text.slice(0, start) + section + (next < 0 ? '' : `\n${rest.slice(next)}`);
  }
  writeFileSync(path, out.endsWith('\n') ? out : `${out}\n`);
  return path;
}
