'use strict';
// initContainer of every Almanac pod: exits 0 once the database has no pending migration, so
// no app starts against an older schema while the migration Job is still running. It only reads
// (TypeORM's own migrations table); the Job alone writes, so replicas never race to migrate.
// Needs DATABASE_URL; runs from the image's working directory (/app) with its built code.
const path = require('node:path');

const appDir = process.env.ALMANAC_APP_DIR || process.cwd();
const timeoutS = Number(process.env.ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S || 600);
const intervalMs = Number(process.env.ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS || 2000);

const say = (msg) => process.stdout.write(`[wait-for-schema] ${msg}\n`);

async function pending(persistence) {
  const ds = persistence.createDataSource({ ...persistence.databaseConfigFromEnv(process.env), poolSize: 1 });
  await ds.initialize();
  try {
    // Names as TypeORM records them: the migration's `name`, else its class name.
    const known = ds.migrations.map((m) => m.name || m.constructor.name);
    const rows = await ds.query('SELECT name FROM migrations');
    const applied = new Set(rows.map((r) => r.name));
    return known.filter((n) => !applied.has(n));
  } finally {
    await ds.destroy();
  }
}

async function main() {
  const persistence = require(path.join(appDir, 'dist/libs/persistence/src/index.js'));
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    let why;
    try {
      const missing = await pending(persistence);
      if (missing.length === 0) {
        say('schema is current');
        return 0;
      }
      why = `${missing.length} migration(s) pending (${missing.join(', ')}): is the almanac-migrate Job running?`;
    } catch (err) {
      // The database may not accept connections yet, or the migrations table may not exist.
      why = `database not ready: ${err && err.message ? err.message : err}`;
    }
    if (Date.now() >= deadline) {
      say(`giving up after ${timeoutS} s: ${why}`);
      return 1;
    }
    say(`${why}; retrying`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    say(`failed: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  },
);
