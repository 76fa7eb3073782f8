import { createDataSource, runKindMigrations, runMigrations } from '../../libs/persistence/src';
import { chargeHandler } from '../../apps/worker/src/handlers/charge.handler';
import { ledgerTransferHandler } from '../../apps/worker/src/handlers/ledger-transfer.handler';
import { randomBytes } from 'node:crypto';
import { urlFor, withAdmin } from './pg-admin';

/** The example kinds whose tables tests write without booting a worker (which would apply them). */
const KINDS_WITH_TABLES = [chargeHandler, ledgerTransferHandler];

/**
 * Builds a template database with every migration applied (the scheduler's, and the example
 * kinds' own), once per Jest run. Each test file
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
  await runKindMigrations({ url: urlFor(TEMPLATE_DB), poolSize: 1 }, KINDS_WITH_TABLES.flatMap((h) => h.migrations ?? []));
}
