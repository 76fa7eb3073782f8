/**
 * What every bench/run.ts result states besides its figures: the machine, the versions, and
 * where results live (bench/results/<date>-<part>[-quick].json).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { benchServerUrl } from './bench-server';
import type { LineChart } from './line-chart';
import type { BarChart } from './svg-chart';

export const BENCH_DIR = join(__dirname, '..');
export const RESULTS_DIR = join(BENCH_DIR, 'results');

export interface Figure {
  name: string;
  median: number;
  min: number;
  max: number;
  unit: string;
  runs: number;
  /** The issue-6 target in words, e.g. "≤ 300 B"; empty when the figure has none. */
  target: string;
  status: 'met' | 'short' | 'n/a';
  note?: string;
}

export interface PartResult {
  runner: 'bench/run.ts';
  part: string;
  at: string;
  quick: boolean;
  command: string;
  seconds: number;
  inputs: Record<string, unknown>;
  machine: Machine;
  versions: Versions;
  figures: Figure[];
  charts: { file: string; chart: BarChart | LineChart }[];
  notes: string[];
  raw: unknown;
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  loadAverageBefore: number[];
  loadAverageAfter: number[];
  hostname: string;
}

export interface Versions {
  node: string;
  postgres: string;
  redis: string;
  bullmq: string;
}

export function machine(loadBefore: number[]): Machine {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    loadAverageBefore: loadBefore.map((x) => Math.round(x * 100) / 100),
    loadAverageAfter: os.loadavg().map((x) => Math.round(x * 100) / 100),
    hostname: os.hostname(),
  };
}

export async function versions(): Promise<Versions> {
  let postgres: string;
  try {
    const c = new Client({ connectionString: `${benchServerUrl()}/postgres` });
    await c.connect();
    postgres = String((await c.query('SHOW server_version')).rows[0].server_version);
    await c.end();
  } catch (err) {
    postgres = `unreachable (${(err as Error).message})`;
  }
  let redis = 'unknown';
  try {
    redis = /v=(\S+)/.exec(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }))?.[1] ?? redis;
  } catch {
    // not installed: the parts that need it fail with their own message
  }
  const bullmq = (JSON.parse(readFileSync(join(BENCH_DIR, '..', 'node_modules/bullmq/package.json'), 'utf8')) as { version: string }).version;
  return { node: process.version, postgres, redis, bullmq };
}

export function resultPath(part: string, quick: boolean, at = new Date()): string {
  return join(RESULTS_DIR, `${at.toISOString().slice(0, 10)}-${part}${quick ? '-quick' : ''}.json`);
}

export function writeResult(r: PartResult): string {
  if (!existsSync(RESULTS_DIR)) mkdirSync(RESULTS_DIR, { recursive: true });
  const path = resultPath(r.part, r.quick, new Date(r.at));
  writeFileSync(path, `${JSON.stringify(r, null, 2)}\n`);
  return path;
}

/** The newest bench/run.ts result of each part, full size before quick (files written by the single scripts are skipped). */
export function latestResults(): Map<string, PartResult> {
  const latest = new Map<string, PartResult>();
  if (!existsSync(RESULTS_DIR)) return latest;
  for (const f of readdirSync(RESULTS_DIR).filter((x) => x.endsWith('.json'))) {
    let r: PartResult;
    try {
      r = JSON.parse(readFileSync(join(RESULTS_DIR, f), 'utf8')) as PartResult;
    } catch {
      continue;
    }
    if (r.runner !== 'bench/run.ts') continue;
    // A full-size result beats any quick one; among equals, the newest wins.
    const rank = (x: PartResult) => `${x.quick ? 0 : 1}${x.at}`;
    const prev = latest.get(r.part);
    if (!prev || rank(prev) < rank(r)) latest.set(r.part, r);
  }
  return latest;
}
