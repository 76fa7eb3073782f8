import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port';
import IORedis from 'ioredis';

/**
 * A throwaway redis-server on a free port, for tests that must make Redis lose data
 * (FLUSHALL, restart). Never do that to the shared server on 6379.
 */
export interface PrivateRedis {
  port: number;
  /** The server's process id (benchmarks read its CPU time from /proc). */
  pid: number;
  url: string;
  connection: IORedis;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const connection = new IORedis(url, { maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(n * 20, 200) });
  // Refused connections while the server boots are expected; the loop below waits them out.
  connection.on('error', () => undefined);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await connection.ping()) === 'PONG') break;
    } catch {
      if (Date.now() > deadline) throw new Error(`private redis-server on ${port} did not start`);
    }
  }
  return {
    port,
    pid: child.pid ?? 0,
    url,
    connection,
    async stop() {
      connection.disconnect();
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    },
  };
}
