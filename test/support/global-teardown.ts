import { templateDb, withAdmin } from './pg-admin';

/** Drops this run's template and any database a test file left behind (its name starts with the template's). */
export default async function globalTeardown(): Promise<void> {
  const template = templateDb();
  await withAdmin(async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${template}\\_%`],
    );
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    await c.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  });
}
