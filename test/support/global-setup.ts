import { createDataSource, runMigrations } from '../../libs/persistence/src';
import { randomBytes } from 'node:crypto';
import { urlFor, withAdmin } from './pg-admin';

/**
 * Builds a template database with every migration applied, once per Jest run. Each test file
 * then clones it (CREATE DATABASE … TEMPLATE), which takes milliseconds instead of migrating.
 */
export default async function globalSetup(): Promise<void> {
  const TEMPLATE_DB = `almanac_tpl_${randomBytes(4).toString('hex')}`;
  process.env.ALMANAC_TEST_TEMPLATE_DB = TEMPLATE_DB;
  await withAdmin((c) => c.query(`CREATE DATABASE ${TEMPLATE_DB}`));
  const ds = createDataSource({ url: urlFor(TEMPLATE_DB), poolSize: 1 });
  await ds.initialize();
  try {
    await runMigrations(ds);
  } finally {
    await ds.destroy();
  }
}
