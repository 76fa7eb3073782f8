import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './local';
// The same discovery `npm start` uses (PATH, then the newest Debian/Homebrew/PGDG install).
import { findPostgres, installHint } from '../../scripts/lib/binaries';

export interface PrivatePostgres {
  /** Admin URL without a database (use with ALMANAC_BENCH_PG_URL). */
  url: string;
  port: number;
  /** The postmaster and every backend, auxiliary process and worker of this cluster. */
  pids(): number[];
  restart(): void;
  stop(): void;
}

/**
 * A throwaway PostgreSQL cluster of the bench's own, so a fault (SIGSTOP, restart) never touches
 * the shared server, and `settings` (`-c name=value`) change only this one. initdb refuses root,
 * so the cluster belongs to the `postgres` user.
 */
export async function startPostgres(settings: Record<string, string> = {}): Promise<PrivatePostgres> {
  const bins = findPostgres();
  if (!bins) throw new Error(installHint(['postgres']));
  const bin = { initdb: bins.initdb, pg_ctl: bins.pgCtl };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'almanac-chaos-pg-'));
  const data = join(dir, 'data');
  const asPostgres = (cmd: keyof typeof bin, args: string[]) => {
    const run = process.getuid?.() === 0 ? spawnSync('runuser', ['-u', 'postgres', '--', bin[cmd], ...args], { encoding: 'utf8' }) : spawnSync(bin[cmd], args, { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`${cmd} failed: ${run.stderr || run.stdout}`);
  };
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off -c synchronous_commit=off -c max_connections=200${Object.entries(settings).map(([k, v]) => ` -c ${k}=${v}`).join('')}`;
  const ctl = (action: string) => asPostgres('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-m', 'fast', action]);
  ctl('start');
  // Interrupted (Ctrl-C, a kill), the bench stops its cluster and removes its files: a killed
  // 60-day retention run left a 6 GB shared_buffers server and its data behind.
  const onSignal = (code: number) => () => (stop(), process.exit(code));
  const signals = [['SIGINT', onSignal(130)], ['SIGTERM', onSignal(143)]] as const;
  for (const [signal, handler] of signals) process.once(signal, handler);
  const stop = () => {
    for (const [signal, handler] of signals) process.off(signal, handler);
    try {
      ctl('stop');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}`,
    port,
    pids() {
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
      return [postmaster, ...children];
    },
    restart: () => ctl('restart'),
    stop,
  };
}
