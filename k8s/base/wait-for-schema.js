'use strict';
// initContainer of every Almanac pod: exits 0 once the database has no pending migration, so
// no app starts against an older schema while the migration Job is still running. It only reads
// (TypeORM's own migrations table); the Job alone writes, so replicas never race to migrate.
// Needs DATABASE_URL; runs from the image's working directory (/app) with its built code. Reads
// the almanac-config ConfigMap and the almanac-secrets Secret, as the app containers do.
const path = require('node:path');

const say = (msg) => process.stdout.write(`[wait-for-schema] ${msg}\n`);

/**
 * A whole number from `min`, or exit 1 naming the variable: `Number('10m')` is NaN, which made
 * the wait endless (a NaN deadline never passes) or its retries immediate (a NaN delay is 1 ms).
 */
function wholeNumber(name, raw, min, unit) {
  const text = String(raw).trim();
  if (/^\d+$/.test(text) && Number(text) >= min) return Number(text);
  say(`${name} must be a whole number of ${unit} from ${min} (got ${JSON.stringify(text)})`);
  process.exit(1);
}

const appDir = process.env.ALMANAC_APP_DIR || process.cwd();
const timeoutS = wholeNumber('ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S', process.env.ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S || 600, 1, 'seconds');
const intervalMs = wholeNumber('ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS', process.env.ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS || 2000, 100, 'milliseconds');

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
