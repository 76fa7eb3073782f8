import { TEMPLATE_DB, withAdmin } from './pg-admin';

export default async function globalTeardown(): Promise<void> {
  await withAdmin(async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE 'almanac_t\\_%'`,
    );
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    await c.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
  });
}
