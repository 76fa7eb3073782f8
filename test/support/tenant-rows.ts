import { TenantsRepository } from '@almanac/persistence';
import type { DataSource } from 'typeorm';

/** New tenants of these names, through the repository the API uses; their ids, in order. For specs. */
export async function createTenants(ds: DataSource, ...names: string[]): Promise<number[]> {
  const tenants = new TenantsRepository(ds);
  const ids: number[] = [];
  for (const name of names) ids.push((await tenants.create(name)).tenant.id);
  return ids;
}
