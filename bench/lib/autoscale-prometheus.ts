import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, sleep } from './local';

/** One element of an instant query's answer. */
export interface PromSample {
  labels: Record<string, string>;
  value: number;
}

export interface PrivatePrometheus {
  url: string;
  /** An instant query, as KEDA's prometheus scaler sends it (GET /api/v1/query, evaluated now). */
  query(expr: string): Promise<PromSample[]>;
  /** Names of the rule groups Prometheus loaded. */
  ruleGroups(): Promise<string[]>;
  /** Resolves once `count` targets report up (bounded by `timeoutMs`). */
  waitForTargets(count: number, timeoutMs: number): Promise<void>;
  logTail(): string;
  stop(): Promise<void>;
}

interface ApiAnswer<T> {
  status: 'success' | 'error';
  error?: string;
  data?: T;
}

type QueryData = { resultType: 'vector'; result: { metric: Record<string, string>; value: [number, string] }[] } | { resultType: 'scalar'; result: [number, string] };

/**
 * A Prometheus of our own (the machine's binary, Debian's /usr/bin/prometheus) in a temporary
 * directory: it scrapes `npm run cluster`'s targets file every 5 s, as
 * k8s/monitoring/prometheus.local.yml does, and evaluates the repository's rule file every 15 s.
 */
export async function startPrometheus(o: { binary: string; targetsFile: string; rulesFile: string }): Promise<PrivatePrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'almanac-autoscale-prometheus-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // JSON is YAML: no YAML writer needed. Absolute paths, as the config lives in the temp dir.
  const config = {
    global: { scrape_interval: '5s', scrape_timeout: '4s', evaluation_interval: '15s' },
    rule_files: [o.rulesFile],
    scrape_configs: [{ job_name: 'almanac', metrics_path: '/metrics', file_sd_configs: [{ files: [o.targetsFile], refresh_interval: '5s' }] }],
  };
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const logFile = join(dir, 'prometheus.log');
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn(o.binary, [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio: ['ignore', out, out] });
  closeSync(out); // the child holds its own copy
  const logTail = () => {
    try {
      return readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
    } catch {
      return '';
    }
  };

  const api = async <T>(path: string, body?: URLSearchParams): Promise<T> => {
    const res = await fetch(`${url}${path}`, { method: body ? 'POST' : 'GET', body, signal: AbortSignal.timeout(20_000) });
    const answer = (await res.json()) as ApiAnswer<T>;
    if (answer.status !== 'success' || answer.data === undefined) throw new Error(`Prometheus ${path}: ${answer.error ?? res.status}`);
    return answer.data;
  };

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(force);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      const tail = logTail();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`prometheus exited (${child.exitCode}) before it was ready:\n${tail}`);
    }
    const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready after 60 s:\n${logTail()}`);
    }
    await sleep(500);
  }

  return {
    url,
    async query(expr) {
      const data = await api<QueryData>('/api/v1/query', new URLSearchParams({ query: expr }));
      if (data.resultType === 'scalar') return [{ labels: {}, value: Number(data.result[1]) }];
      return data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
    },
    async ruleGroups() {
      const data = await api<{ groups: { name: string }[] }>('/api/v1/rules');
      return data.groups.map((g) => g.name);
    },
    async waitForTargets(count, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const data = await api<{ activeTargets: { health: string }[] }>('/api/v1/targets?state=active');
        const up = data.activeTargets.filter((t) => t.health === 'up').length;
        if (up >= count) return;
        if (Date.now() > until) throw new Error(`only ${up} of ${count} scrape targets up after ${timeoutMs / 1000} s`);
        await sleep(1000);
      }
    },
    logTail,
    stop,
  };
}
