import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { hashApiKey, TenantsRepository } from './tenants.repository';

describe('TenantsRepository (Postgres)', () => {
  let db: TestDatabase;
  let tenants: TenantsRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    tenants = new TenantsRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  it('creates a tenant with a prefixed random key and stores only its sha256', async () => {
    const { tenant, apiKey } = await tenants.create('acme');
    expect(apiKey).toMatch(/^alm_[A-Za-z0-9_-]{43}$/);
    expect(tenant).toMatchObject({ name: 'acme', rateLimitPerSecond: null });
    const [row] = await db.dataSource.query(`SELECT key_hash, prefix FROM tenant_keys WHERE tenant_id = $1`, [tenant.id]);
    expect(Buffer.compare(row.key_hash, hashApiKey(apiKey))).toBe(0);
    expect(row.prefix).toBe(apiKey.slice(0, 10));
    const all = JSON.stringify([...(await db.dataSource.query(`SELECT * FROM tenants`)), ...(await db.dataSource.query(`SELECT * FROM tenant_keys`))]);
    expect(all).not.toContain(apiKey.slice(4));
  });

  it('finds a tenant by its key and by id, and nothing for wrong or malformed keys', async () => {
    const a = await tenants.create('a', { rateLimitPerSecond: 50 });
    const b = await tenants.create('b');
    expect(await tenants.findByApiKey(a.apiKey)).toEqual(a.tenant);
    expect(await tenants.findByApiKey(b.apiKey)).toEqual(b.tenant);
    expect(a.tenant.rateLimitPerSecond).toBe(50);
    expect(await tenants.findByApiKey(`alm_${'A'.repeat(43)}`)).toBeNull();
    expect(await tenants.findByApiKey(a.apiKey + 'x')).toBeNull();
    expect(await tenants.findByApiKey('')).toBeNull();
    expect(await tenants.findById(a.tenant.id)).toEqual(a.tenant);
    expect(await tenants.findById(999999)).toBeNull();
    expect(await tenants.findById(-1)).toBeNull();
  });

  it('keeps only the sha256 of the key and never hands the hash out', async () => {
    const { tenant, apiKey } = await tenants.create('hashed');
    const [row] = await db.dataSource.query(`SELECT key_hash FROM tenant_keys WHERE tenant_id = $1`, [tenant.id]);
    expect(row.key_hash).toEqual(hashApiKey(apiKey));
    expect(tenant).not.toHaveProperty('apiKeyHash');
    expect(await tenants.findById(tenant.id)).toEqual(tenant);
  });
});
