import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createDataSource } from '../../libs/persistence/src';
import { templateDb, urlFor, withAdmin } from './pg-admin';

export interface TestDatabase {
  name: string;
  url: string;
  dataSource: DataSource;
  drop(): Promise<void>;
}

/** A fresh database for one test file, cloned from the migrated template. */
export async function createTestDatabase(poolSize = 5): Promise<TestDatabase> {
  const template = templateDb();
  const name = `${template}_${randomBytes(5).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = urlFor(name);
  const dataSource = createDataSource({ url, poolSize });
  await dataSource.initialize();
  return {
    name,
    url,
    dataSource,
    async drop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
