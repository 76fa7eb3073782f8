// @ts-check
'use strict';
// A private redis-server in .data/redis, configured the way Almanac wants it in production
// (AOF on, noeviction, hz 100), stopped when npm start ends.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { info, StartError } = require('./log');
const { redisAnswers } = require('./net');

/**
 * @typedef {object} PrivateRedis
 * @property {string} url
 * @property {(options?: { sync?: boolean }) => Promise<void>} stop
 */

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * @param {string} pidFile
 * @returns {Promise<void>}
 */
async function stopLeftover(pidFile) {
  let pid;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!pid || !alive(pid)) return;
  info(`stopping a private Redis (pid ${pid}) left running by an earlier run`);
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
}

/**
 * Starts redis-server on 127.0.0.1 (port picked after any leftover is stopped); resolves to {url, stop}.
 * @param {object} options
 * @param {string} options.dataRoot the .data folder; Redis keeps its files in its redis/ folder
 * @param {() => Promise<number>} options.pickPort
 * @param {string} options.bin the redis-server executable
 * @returns {Promise<PrivateRedis>}
 */
async function startPrivateRedis({ dataRoot, pickPort, bin }) {
  const dir = path.join(dataRoot, 'redis');
  fs.mkdirSync(dir, { recursive: true });
  const pidFile = path.join(dir, 'redis.pid');
  const logFile = path.join(dir, 'server.log');
  await stopLeftover(pidFile);
  const port = await pickPort();

  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--pidfile', pidFile,
    '--logfile', logFile, '--daemonize', 'no', '--save', '',
    '--appendonly', 'yes', '--maxmemory-policy', 'noeviction', '--hz', '100',
  ];
  // Own process group: Ctrl-C reaches the app first; Redis is stopped after the app has drained.
  const child = spawn(bin, args, { detached: true, stdio: 'ignore' });
  /** @type {{ code: number | null, signal: string | null } | null} */
  let exited = null;
  child.once('exit', (code, signal) => {
    exited = { code, signal };
  });
  child.once('error', (err) => {
    exited = { code: -1, signal: String(err) };
  });

  const deadline = Date.now() + 20_000;
  while (!(await redisAnswers('127.0.0.1', port))) {
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill('SIGKILL');
      let log = '';
      try {
        log = fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-15).join('\n');
      } catch {
        // no log yet
      }
      throw new StartError(`redis-server did not start on port ${port}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  info(`private Redis on 127.0.0.1:${port} (log: ${logFile})`);

  return {
    url: `redis://127.0.0.1:${port}`,
    /** SIGTERM makes Redis fsync its AOF and exit; wait for that unless called from an exit handler. */
    async stop({ sync = false } = {}) {
      if (exited) return;
      child.kill('SIGTERM');
      if (sync) return;
      for (let i = 0; i < 100 && !exited; i++) await new Promise((r) => setTimeout(r, 100));
      if (!exited) child.kill('SIGKILL');
      info('private Redis stopped');
    },
  };
}

module.exports = { startPrivateRedis };
