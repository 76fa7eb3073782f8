'use strict';
// Applies pending migrations with the built code: the platform's runMigrationsFromEnv() when the
// platform library is built, else the persistence library's createDataSource + runMigrations.
const fs = require('node:fs');
const path = require('node:path');

const PLATFORM = 'dist/libs/platform/src/index.js';
const PERSISTENCE = 'dist/libs/persistence/src/index.js';

async function migrate(root, env) {
  const platformPath = path.join(root, PLATFORM);
  if (fs.existsSync(platformPath)) {
    const platform = require(platformPath);
    if (typeof platform.runMigrationsFromEnv === 'function') return platform.runMigrationsFromEnv(env);
  }
  const persistencePath = path.join(root, PERSISTENCE);
  if (!fs.existsSync(persistencePath)) {
    throw new Error(`neither ${PLATFORM} nor ${PERSISTENCE} exists: run \`npm run build\` first`);
  }
  const { createDataSource, databaseConfigFromEnv, runMigrations } = require(persistencePath);
  const ds = createDataSource({ ...databaseConfigFromEnv(env), poolSize: 1 });
  await ds.initialize();
  try {
    return await runMigrations(ds);
  } finally {
    await ds.destroy();
  }
}

module.exports = { migrate };
