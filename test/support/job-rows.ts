import type { DataSource } from 'typeorm';

/** One job row straight into `jobs` (state as its one-letter code); returns its id. For specs. */
export async function insertJob(ds: DataSource, tenant: number, key: string, runAtMs: number, state: string, kind = 'noop'): Promise<string> {
  const rows: { id: string }[] = await ds.query(
    `INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, $2, $3, $4, $5) RETURNING id::text AS id`,
    [tenant, key, kind, new Date(runAtMs), state],
  );
  return rows[0].id;
}
