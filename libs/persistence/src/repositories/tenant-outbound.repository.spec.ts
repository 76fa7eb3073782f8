import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { TenantOutboundRepository } from './tenant-outbound.repository';
import { TenantsRepository } from './tenants.repository';

describe('TenantOutboundRepository (Postgres)', () => {
  let db: TestDatabase;
  let outbound: TenantOutboundRepository;
  let tenants: TenantsRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    outbound = new TenantOutboundRepository(db.dataSource);
    tenants = new TenantsRepository(db.dataSource);
  });
  afterAll(async () => db.drop());

  it('keeps a per-tenant allow-list, empty by default, and nothing for an unknown tenant', async () => {
    const { tenant } = await tenants.create('hosts');
    const other = await tenants.create('other');
    expect((await outbound.settings(tenant.id))?.httpAllowHosts).toEqual([]);
    expect(await outbound.setAllowHosts(tenant.id, ['https://a.example.com', 'http://127.0.0.1:8080'])).toEqual(['https://a.example.com', 'http://127.0.0.1:8080']);
    expect(await outbound.forDelivery(tenant.id)).toEqual({ allowHosts: ['https://a.example.com', 'http://127.0.0.1:8080'], secrets: [], emailAllowed: false });
    expect((await outbound.settings(other.tenant.id))?.httpAllowHosts).toEqual([]);
    expect(await outbound.setAllowHosts(999999, ['https://x.com'])).toBeNull();
    expect(await outbound.forDelivery(999999)).toBeNull();
    expect(await outbound.forDelivery(0)).toBeNull();
  });

  it('keeps a per-tenant email permission, off by default, and nothing for an unknown tenant', async () => {
    const { tenant } = await tenants.create('mailer');
    const other = await tenants.create('not-a-mailer');
    expect(await outbound.settings(tenant.id)).toEqual({ httpAllowHosts: [], emailAllowed: false });
    expect(await outbound.setEmailAllowed(tenant.id, true)).toBe(true);
    expect(await outbound.forDelivery(tenant.id)).toMatchObject({ emailAllowed: true });
    expect(await outbound.settings(tenant.id)).toEqual({ httpAllowHosts: [], emailAllowed: true });
    expect((await outbound.forDelivery(other.tenant.id))!.emailAllowed).toBe(false);
    expect(await outbound.setEmailAllowed(tenant.id, false)).toBe(false);
    expect((await outbound.forDelivery(tenant.id))!.emailAllowed).toBe(false);
    expect(await outbound.setEmailAllowed(999999, true)).toBeNull();
    expect(await outbound.settings(999999)).toBeNull();
  });

  it('rotates secrets: the new one first, the old one live through its overlap, never more than two', async () => {
    const { tenant } = await tenants.create('signing');
    const first = await outbound.rotateSigningSecret(tenant.id, 86_400_000);
    expect(first).toMatchObject({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/), view: { expiresAt: null }, previousExpiresAt: null });
    expect((await outbound.forDelivery(tenant.id))!.secrets).toEqual([first!.secret]);

    const second = await outbound.rotateSigningSecret(tenant.id, 86_400_000);
    expect(second!.previousExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 86_000_000);
    expect((await outbound.forDelivery(tenant.id))!.secrets).toEqual([second!.secret, first!.secret]);

    // A rotation within the overlap ends the older overlap: at most two live secrets.
    const third = await outbound.rotateSigningSecret(tenant.id, 86_400_000);
    expect((await outbound.forDelivery(tenant.id))!.secrets).toEqual([third!.secret, second!.secret]);

    // Overlap 0 (a leaked secret): only the new one is live.
    const fourth = await outbound.rotateSigningSecret(tenant.id, 0);
    expect(fourth!.previousExpiresAt).toBeNull();
    expect((await outbound.forDelivery(tenant.id))!.secrets).toEqual([fourth!.secret]);

    const listed = await outbound.listSigningSecrets(tenant.id);
    expect(listed!.map((s) => s.id)).toEqual([fourth!.view.id, third!.view.id, second!.view.id, first!.view.id]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    expect(await outbound.rotateSigningSecret(999999, 0)).toBeNull();
    expect(await outbound.listSigningSecrets(999999)).toBeNull();
  });

  it('lets concurrent rotations all succeed, leaving exactly one current secret', async () => {
    const { tenant } = await tenants.create('racing');
    const made = await Promise.all(Array.from({ length: 4 }, () => outbound.rotateSigningSecret(tenant.id, 60_000)));
    expect(made.every((m) => m !== null)).toBe(true);
    const [{ current }] = await db.dataSource.query(
      `SELECT count(*)::int AS current FROM tenant_signing_secrets WHERE tenant_id = $1 AND expires_at IS NULL`,
      [tenant.id],
    );
    expect(current).toBe(1);
    expect((await outbound.forDelivery(tenant.id))!.secrets.length).toBeLessThanOrEqual(2);
  });
});
