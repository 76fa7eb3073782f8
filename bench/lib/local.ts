import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { processCpuSeconds } from './cpu';

/** What every bench script shares: flags, ports, private Redis servers, CPU readings, medians. */
export const ROOT = join(__dirname, '..', '..');

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** CPU seconds a local process has used; NaN when it is gone or unknown. */
export function cpuSeconds(pid: number | undefined): number {
  return pid === undefined ? NaN : (processCpuSeconds(pid) ?? NaN);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  /** the redis-server process (its CPU is part of a system's cost per job) */
  pid: number | undefined;
  connection: IORedis;
  stop(): Promise<void>;
}

/**
 * A redis-server of our own (no persistence), so CONFIG SET, FLUSHALL and load never touch the
 * shared one. `hz` defaults to Redis' own 10.
 */
export async function startRedis(hz = 10): Promise<PrivateRedis> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--hz', String(hz)], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  const connection = new IORedis(url, { maxRetriesPerRequest: null, retryStrategy: (n) => (n > 50 ? null : 100) });
  connection.on('error', () => undefined); // the server is ours and stops before the client notices
  await connection.ping();
  return {
    url,
    pid: child.pid,
    connection,
    async stop() {
      connection.disconnect();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}
