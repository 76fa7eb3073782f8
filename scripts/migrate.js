#!/usr/bin/env node
// @ts-check
'use strict';
// `npm run migrate`: applies pending migrations to DATABASE_URL with the built code and exits.
// The same step runs before the apps start (npm start, the docker-compose `migrate` service,
// the Kubernetes migration Job). A failure exits non-zero so nothing boots on a stale schema.
const path = require('node:path');
const { migrate } = require('./lib/migrations');

const root = path.resolve(__dirname, '..');

migrate(root, process.env).then(
  (applied) => {
    const names = Array.isArray(applied) ? applied : [];
    process.stdout.write(names.length
      ? `[almanac] applied ${names.length} migration(s): ${names.join(', ')}\n`
      : '[almanac] schema is up to date\n');
  },
  /** @param {unknown} err */
  (err) => {
    // Named errors already say what to fix; anything else gets its stack.
    const known = err instanceof Error && (err.name === 'MigrationError' || err.name === 'ConfigError');
    process.stderr.write(`[almanac] migration failed: ${known ? err.message : (err instanceof Error && err.stack) || String(err)}\n`);
    process.exitCode = 1;
  },
).finally(() => {
  // A pool or logger left open by the library must not keep a finished migration hanging.
  process.exit();
});
