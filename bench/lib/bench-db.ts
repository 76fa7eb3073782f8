import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { createDataSource, runMigrations } from '../../libs/persistence/src';
import { benchServerUrl } from './bench-server';

export interface BenchDatabase {
  url: string;
  dataSource: DataSource;
  drop(): Promise<void>;
}

export { benchServerUrl };

async function admin<T>(server: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: `${server}/postgres` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh, migrated database of its own, so a benchmark never touches real or test data. */
export async function createBenchDatabase(prefix: string, poolSize = 4): Promise<BenchDatabase> {
  const server = benchServerUrl();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await admin(server, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = `${server}/${name}`;
  const dataSource = createDataSource({ url, poolSize });
  await dataSource.initialize();
  await runMigrations(dataSource);
  return {
    url,
    dataSource,
    async drop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await admin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** The server's current WAL position in bytes: the difference of two readings is the WAL written between them. */
export async function walPosition(ds: DataSource): Promise<bigint> {
  const [r] = await ds.query<{ lsn: string }[]>(`SELECT pg_current_wal_lsn()::text AS lsn`);
  const [hi, lo] = r.lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}
