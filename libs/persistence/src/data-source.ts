import { DataSource } from 'typeorm';
import { DatabaseConfig } from './database-config';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

export function createDataSource(config: DatabaseConfig): DataSource {
  return new DataSource({
    type: 'postgres',
    url: config.url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    extra: { max: config.poolSize },
  });
}

/** Applies pending migrations; a failure throws and must stop boot. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const done = await dataSource.runMigrations({ transaction: 'each' });
  return done.map((m) => m.name);
}
