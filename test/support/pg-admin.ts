import { Client } from 'pg';

/** Admin connection to the test server; tests create and drop their own databases through it. */
export const TEST_PG_BASE = process.env.ALMANAC_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
export const TEMPLATE_DB = 'almanac_test_template';

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
