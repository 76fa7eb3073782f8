// @ts-check
'use strict';
// Applies pending migrations with the built code: the platform's runMigrationsFromEnv() when the
// platform library is built, else the persistence library's createDataSource + runMigrations.
const fs = require('node:fs');
const path = require('node:path');

const PLATFORM = 'dist/libs/platform/src/index.js';
const PERSISTENCE = 'dist/libs/persistence/src/index.js';

// dist/ may not exist when this file is checked (or even run), so its types cannot be imported:
// these describe the few exports used here (see libs/platform/src/bootstrap/migrate.ts and
// libs/persistence/src/data-source.ts).
/**
 * @typedef {object} PlatformLib
 * @property {(env: NodeJS.ProcessEnv) => Promise<string[]>} [runMigrationsFromEnv] names applied
 */
/**
 * @typedef {object} MigrationDataSource
 * @property {() => Promise<unknown>} initialize
 * @property {() => Promise<void>} destroy
 */
/**
 * @typedef {object} PersistenceLib
 * @property {(config: object) => MigrationDataSource} createDataSource
 * @property {(env: NodeJS.ProcessEnv) => object} databaseConfigFromEnv
 * @property {(ds: MigrationDataSource) => Promise<string[]>} runMigrations names applied
 */

/**
 * Applies pending migrations to env.DATABASE_URL; resolves to the names of those applied.
 * @param {string} root
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<string[]>}
 */
async function migrate(root, env) {
  const platformPath = path.join(root, PLATFORM);
  if (fs.existsSync(platformPath)) {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- a require by runtime path is any; the JSDoc cast types it
    const platform = /** @type {PlatformLib} */ (require(platformPath));
    if (typeof platform.runMigrationsFromEnv === 'function') return platform.runMigrationsFromEnv(env);
  }
  const persistencePath = path.join(root, PERSISTENCE);
  if (!fs.existsSync(persistencePath)) {
    throw new Error(`neither ${PLATFORM} nor ${PERSISTENCE} exists: run \`npm run build\` first`);
  }
  // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- as above
  const { createDataSource, databaseConfigFromEnv, runMigrations } = /** @type {PersistenceLib} */ (require(persistencePath));
  const ds = createDataSource({ ...databaseConfigFromEnv(env), poolSize: 1 });
  await ds.initialize();
  try {
    return await runMigrations(ds);
  } finally {
    await ds.destroy();
  }
}

module.exports = { migrate };
