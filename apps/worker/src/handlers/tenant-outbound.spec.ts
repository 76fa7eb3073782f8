import { type TenantOutboundRecord, TenantOutboundRepository, TenantsRepository } from '@almanac/persistence';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { outboundRulesReader, TENANT_OUTBOUND_CACHE, TenantOutboundCache } from './tenant-outbound';

describe('TenantOutboundCache', () => {
  let clock: number;
  let reads: number;
  let answer: () => Promise<TenantOutboundRecord | null>;
  const cache = () => new TenantOutboundCache(async () => {
    reads++;
    return answer();
  }, { ...TENANT_OUTBOUND_CACHE, ttlMs: 5_000, waitMs: 50, staleMs: 60_000, maxTenants: 2 }, () => clock);

  beforeEach(() => {
    clock = 1_000_000;
    reads = 0;
    answer = async () => ({ allowHosts: ['https://a.example.com', 'not an entry'], secrets: ['whsec_new', 'whsec_old'], emailAllowed: true });
  });

  it('reads a tenant once per TTL, and concurrent jobs share one read', async () => {
    const c = cache();
    const [a, b] = await Promise.all([c.get(1), c.get(1)]);
    expect(reads).toBe(1);
    expect(a).toBe(b);
    expect(a!.allowHosts.map((r) => r.text)).toEqual(['https://a.example.com']); // an entry that no longer parses allows nothing
    expect(a!.secrets).toEqual(['whsec_new', 'whsec_old']);
    expect(a!.emailAllowed).toBe(true);
    clock += 4_999;
    await c.get(1);
    expect(reads).toBe(1);
    clock += 1;
    await c.get(1);
    expect(reads).toBe(2);
  });

  it('waits a bounded time for a read, then uses rules up to a minute old, and fails beyond that', async () => {
    const c = cache();
    await c.get(1);
    answer = () => new Promise(() => undefined); // Postgres hangs
    clock += 30_000;
    expect((await c.get(1))!.secrets).toEqual(['whsec_new', 'whsec_old']);
    clock += 31_000;
    await expect(c.get(1)).rejects.toThrow(/did not answer within 50 ms/);
    await expect(c.get(2)).rejects.toThrow(/did not answer/);
  });

  it('remembers an unknown tenant as null, and keeps at most maxTenants', async () => {
    const c = cache();
    answer = async () => null;
    expect(await c.get(1)).toBeNull();
    await c.get(2);
    await c.get(3); // evicts 1
    expect(reads).toBe(3);
    await c.get(3);
    await c.get(1);
    expect(reads).toBe(4);
  });
});

describe('outboundRulesReader (Postgres)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(2);
  });
  afterAll(() => db.drop());

  it('reads the rules, and Postgres ends a read stuck behind a lock after the wait, freeing its connection', async () => {
    const tenant = (await new TenantsRepository(db.dataSource).create('acme')).tenant.id;
    await new TenantOutboundRepository(db.dataSource).setAllowHosts(tenant, ['https://a.example.com']);
    const read = outboundRulesReader(db.dataSource, 200);
    expect(await read(tenant)).toEqual({ allowHosts: ['https://a.example.com'], secrets: [], emailAllowed: false });
    const holder = db.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE`);
      await expect(read(tenant)).rejects.toThrow(/statement timeout/);
      await holder.rollbackTransaction();
    } finally {
      await holder.release();
    }
    expect(await read(tenant)).toEqual({ allowHosts: ['https://a.example.com'], secrets: [], emailAllowed: false });
  });
});
