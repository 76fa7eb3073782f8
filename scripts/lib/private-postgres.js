// @ts-check
'use strict';
// A private Postgres cluster in .data/postgres, started with pg_ctl and stopped when npm start ends.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { info, StartError } = require('./log');

/**
 * A private server as resolveServices uses it: where to connect, and how to stop it.
 * @typedef {{ url: string, stop: () => void }} PrivatePostgres
 */

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * initdb and postgres refuse to run as root. As root we run them as the `postgres` system user
 * (it exists wherever the distribution packages are installed) and give it the data folder.
 * @param {string} dir
 * @returns {string[]} the command words to put before initdb/pg_ctl (none when not root)
 */
function runAsPrefix(dir) {
  if (!isRoot()) return [];
  const hasUser = spawnSync('id', ['-u', 'postgres'], { stdio: 'ignore' }).status === 0;
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((p) => fs.existsSync(p));
  if (!hasUser || !runuser) {
    throw new StartError(
      'initdb refuses to run as root, and there is no `postgres` user (or no runuser) to run it as.\n' +
      '  Either run `npm start` as a regular user, or create the user: useradd --system --create-home postgres,\n' +
      '  or point DATABASE_URL at an existing server.');
  }
  spawnSync('chown', ['-R', 'postgres:', dir], { stdio: 'inherit' });
  if (spawnSync(runuser, ['-u', 'postgres', '--', 'test', '-w', dir], { stdio: 'ignore' }).status !== 0) {
    throw new StartError(
      `initdb refuses to run as root, and the postgres user cannot write ${dir} (a parent folder is not\n` +
      '  searchable by other users). Run `npm start` as a regular user, move the checkout somewhere\n' +
      '  world-readable, or point DATABASE_URL at an existing server.');
  }
  return [runuser, '-u', 'postgres', '--'];
}

/**
 * @param {string[]} prefix
 * @param {string[]} argv
 * @param {Omit<import('node:child_process').SpawnSyncOptions, 'encoding'>} [opts]
 * @returns {import('node:child_process').SpawnSyncReturns<string>}
 */
function run(prefix, argv, opts = {}) {
  const [cmd, ...args] = [...prefix, ...argv];
  return spawnSync(cmd, args, { encoding: 'utf8', ...opts });
}

/**
 * @param {string} file
 * @returns {string} its last lines
 */
function tail(file, lines = 20) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts (initialising on first use) a cluster on 127.0.0.1; resolves to {url, stop}. The port is
 * picked after any leftover cluster is stopped, so a rerun gets its usual port back.
 * @param {object} options
 * @param {string} options.dataRoot the .data folder; the cluster lives in its postgres/ folder
 * @param {() => Promise<number>} options.pickPort
 * @param {import('./binaries').PostgresBins} options.bins
 * @returns {Promise<PrivatePostgres>}
 */
async function startPrivatePostgres({ dataRoot, pickPort, bins }) {
  const dir = path.join(dataRoot, 'postgres');
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  fs.mkdirSync(dir, { recursive: true });
  const prefix = runAsPrefix(dir);

  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    info(`initialising a private Postgres cluster in ${path.relative(process.cwd(), dataDir) || dataDir}`);
    const res = run(prefix, [bins.initdb, '-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale']);
    if (res.status !== 0) throw new StartError(`initdb failed:\n${res.stderr || res.stdout}`);
  }

  // A cluster still running here is a leftover from a start script that was killed: stop it.
  if (run(prefix, [bins.pgCtl, 'status', '-D', dataDir]).status === 0) {
    info('stopping a private Postgres left running by an earlier run');
    run(prefix, [bins.pgCtl, 'stop', '-D', dataDir, '-m', 'fast', '-w']);
  }
  const port = await pickPort();

  // Unix socket paths are limited to ~107 bytes; fall back to the temp folder for deep checkouts.
  const socketDir = dir.length < 80 ? dir : os.tmpdir();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k '${socketDir}'`;
  const res = run(prefix, [bins.pgCtl, 'start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', options], { stdio: ['ignore', 'pipe', 'pipe'] });
  if (res.status !== 0) {
    throw new StartError(`pg_ctl start failed on port ${port}. Last lines of ${logFile}:\n${tail(logFile)}`);
  }
  info(`private Postgres on 127.0.0.1:${port} (log: ${logFile})`);

  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/almanac`,
    stop() {
      if (stopped) return;
      stopped = true;
      // A second Ctrl-C reaches pg_ctl too and interrupts its wait, not the shutdown it asked
      // for: ask again until `pg_ctl status` says the server is gone.
      for (let attempt = 1; attempt <= 3; attempt++) {
        const r = run(prefix, [bins.pgCtl, 'stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '30']);
        if (r.status === 0 || run(prefix, [bins.pgCtl, 'status', '-D', dataDir]).status === 3) {
          info('private Postgres stopped');
          return;
        }
        if (attempt === 3) process.stderr.write(`[almanac] pg_ctl stop failed: ${r.stderr || r.error}\n`);
      }
    },
  };
}

module.exports = { startPrivatePostgres };
