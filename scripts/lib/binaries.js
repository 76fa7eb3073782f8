// @ts-check
'use strict';
// Finds the machine's own Postgres and Redis server binaries, and says what to install if absent.
const fs = require('node:fs');
const path = require('node:path');

/** @typedef {'postgres' | 'redis'} Service */
/** @typedef {{ initdb: string, pgCtl: string }} PostgresBins */

/**
 * The full path of an executable `name` in a PATH folder, or null.
 * @param {string} name
 * @returns {string | null}
 */
function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const full = path.join(dir, name);
    try {
      fs.accessSync(full, fs.constants.X_OK);
      return full;
    } catch {
      // keep looking
    }
  }
  return null;
}

/**
 * Versioned install folders, newest first: Debian/Ubuntu, Homebrew (Intel and Apple silicon), PGDG RPMs.
 * @returns {string[]}
 */
function postgresBinDirs() {
  /** @type {string[]} */
  const dirs = [];
  /**
   * @param {string} parent
   * @param {RegExp} pattern
   * @param {(dir: string) => string} toBin
   */
  const scan = (parent, pattern, toBin) => {
    let names;
    try {
      names = fs.readdirSync(parent);
    } catch {
      return;
    }
    const matched = names
      .filter((n) => pattern.test(n))
      .sort((a, b) => Number((b.match(/\d+/) ?? ['0'])[0]) - Number((a.match(/\d+/) ?? ['0'])[0]));
    for (const n of matched) dirs.push(toBin(path.join(parent, n)));
  };
  scan('/usr/lib/postgresql', /^\d+$/, (d) => path.join(d, 'bin'));
  scan('/opt/homebrew/opt', /^postgresql(@\d+)?$/, (d) => path.join(d, 'bin'));
  scan('/usr/local/opt', /^postgresql(@\d+)?$/, (d) => path.join(d, 'bin'));
  scan('/usr', /^pgsql-\d+$/, (d) => path.join(d, 'bin'));
  return dirs;
}

/**
 * initdb/pg_ctl from PATH, else the newest versioned install folder holding both.
 * @returns {PostgresBins | null}
 */
function findPostgres() {
  const initdb = onPath('initdb');
  const pgCtl = onPath('pg_ctl');
  if (initdb && pgCtl) return { initdb, pgCtl };
  for (const dir of postgresBinDirs()) {
    const i = path.join(dir, 'initdb');
    const p = path.join(dir, 'pg_ctl');
    if (fs.existsSync(i) && fs.existsSync(p)) return { initdb: i, pgCtl: p };
  }
  return null;
}

/** @returns {string | null} */
function findRedis() {
  return onPath('redis-server');
}

/**
 * The exact command that installs what is missing on this kind of machine.
 * @param {Service[]} missing
 * @returns {string}
 */
function installHint(missing) {
  const sudo = process.getuid && process.getuid() === 0 ? '' : 'sudo ';
  if (process.platform === 'darwin') {
    const pkgs = missing.map((m) => (m === 'postgres' ? 'postgresql@16' : 'redis'));
    return `brew install ${pkgs.join(' ')}` +
      (missing.includes('postgres') ? ' && brew link --force postgresql@16' : '');
  }
  if (onPath('apt-get')) {
    const pkgs = missing.map((m) => (m === 'postgres' ? 'postgresql' : 'redis-server'));
    return `${sudo}apt-get update && ${sudo}apt-get install -y ${pkgs.join(' ')}`;
  }
  if (onPath('dnf')) {
    const pkgs = missing.map((m) => (m === 'postgres' ? 'postgresql-server' : 'redis'));
    return `${sudo}dnf install -y ${pkgs.join(' ')}`;
  }
  if (onPath('apk')) {
    const pkgs = missing.map((m) => (m === 'postgres' ? 'postgresql' : 'redis'));
    return `${sudo}apk add ${pkgs.join(' ')}`;
  }
  return `install ${missing.map((m) => (m === 'postgres' ? 'PostgreSQL 13+ (initdb, pg_ctl)' : 'Redis 6.2+ (redis-server)')).join(' and ')}`;
}

module.exports = { onPath, findPostgres, findRedis, installHint };
