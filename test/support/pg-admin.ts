import { readSetting } from '@almanac/config';
import { Client } from 'pg';

/** Admin connection to the test server; tests create and drop their own databases through it. */
export const TEST_PG_BASE = readSetting(process.env, 'ALMANAC_TEST_PG_URL');
/**
 * Each Jest run migrates its own template (named in the environment by global-setup), so two
 * runs at once on one server never drop each other's databases.
 */
export function templateDb(): string {
  const name = process.env.ALMANAC_TEST_TEMPLATE_DB;
  if (!name) throw new Error('ALMANAC_TEST_TEMPLATE_DB is unset: run tests through jest (global-setup sets it)');
  return name;
}

export function urlFor(database: string): string {
  return `${TEST_PG_BASE.replace(/\/$/, '')}/${database}`;
}

export async function withAdmin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: urlFor('postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
