// @ts-check
'use strict';
// Builds the apps when dist/ is missing or older than the sources, so `npm start` on a fresh
// clone (or after a `git pull`) always runs what is checked out.
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { info, StartError } = require('./log');

const ENTRY = 'dist/apps/api/src/all-in-one.main.js';
const SOURCE_DIRS = ['apps', 'libs'];
const CONFIG_FILES = ['package-lock.json', 'tsconfig.json', 'tsconfig.build.json', '.swcrc', 'nest-cli.json'];

/**
 * Newest modification time (ms) of any build input: app/lib sources (not specs) and build config.
 * @param {string} root
 * @returns {number}
 */
function newestSourceMtime(root) {
  let newest = 0;
  /** @param {string} dir */
  const visit = (dir) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) visit(full);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) {
        newest = Math.max(newest, fs.statSync(full).mtimeMs);
      }
    }
  };
  for (const d of SOURCE_DIRS) visit(path.join(root, d));
  for (const f of CONFIG_FILES) {
    try {
      newest = Math.max(newest, fs.statSync(path.join(root, f)).mtimeMs);
    } catch {
      // optional file
    }
  }
  return newest;
}

/**
 * Why a build is needed, or null when dist/ is current.
 * @param {string} root
 * @returns {string | null}
 */
function buildReason(root) {
  const entry = path.join(root, ENTRY);
  if (!fs.existsSync(entry)) return `${ENTRY} is missing`;
  if (newestSourceMtime(root) > fs.statSync(entry).mtimeMs) return 'sources changed since the last build';
  return null;
}

const { ensureDeps } = require('../ensure-deps');

/**
 * Installs dependencies if missing, then builds unless dist/ is current; a failed build throws.
 * @param {string} root
 * @returns {void}
 */
function ensureBuilt(root) {
  ensureDeps(root);
  const reason = buildReason(root);
  if (!reason) return;
  info(`building (${reason}): npm run build`);
  const started = Date.now();
  const res = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (res.status !== 0) throw new StartError('`npm run build` failed (see above).');
  if (!fs.existsSync(path.join(root, ENTRY))) {
    throw new StartError(`the build finished but ${ENTRY} is missing: the all-in-one entry ` +
      '(apps/api/src/all-in-one.main.ts) does not exist in this checkout yet.');
  }
  // swc copies mtimes loosely; touch the entry so an unchanged tree is not rebuilt next time.
  const now = new Date();
  fs.utimesSync(path.join(root, ENTRY), now, now);
  info(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

module.exports = { ensureBuilt, buildReason, ENTRY };
