#!/usr/bin/env node
// @ts-check
// Installs the locked dependencies when node_modules is missing, so `npm start` and `npm test`
// work on a fresh clone without a separate `npm ci`. Plain Node: it runs before anything is installed.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

/**
 * Runs `npm ci` in root when node_modules is missing; exits the process if that fails.
 * @param {string} [root] the repository root (default: this script's parent folder)
 * @returns {void}
 */
function ensureDeps(root = path.join(__dirname, '..')) {
  if (fs.existsSync(path.join(root, 'node_modules', '.package-lock.json'))) return;
  process.stderr.write('[almanac] dependencies are not installed: running npm ci\n');
  const res = spawnSync('npm', ['ci'], { cwd: root, stdio: 'inherit' });
  if (res.status !== 0) {
    process.stderr.write('[almanac] `npm ci` failed (see above); Node 20.19+ and the npm registry are needed\n');
    process.exit(res.status ?? 1);
  }
}

if (require.main === module) ensureDeps();
module.exports = { ensureDeps };
