import { createDataSource, runMigrations } from '../../libs/persistence/src';
import { TEMPLATE_DB, urlFor, withAdmin } from './pg-admin';

/**
 * Builds a template database with every migration applied, once per Jest run. Each test file
 * then clones it (CREATE DATABASE … TEMPLATE), which takes milliseconds instead of migrating.
 */
export default async function globalSetup(): Promise<void> {
  await withAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  });
  const ds = createDataSource({ url: urlFor(TEMPLATE_DB), poolSize: 1 });
  await ds.initialize();
  try {
    await runMigrations(ds);
  } finally {
    await ds.destroy();
  }
}
