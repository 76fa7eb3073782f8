import { TenantOutboundRepository } from '@almanac/persistence';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

describe('a tenant’s http allow-list, email permission and signing secrets (admin API)', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  it('sets httpAllowHosts in canonical spelling, leaves it alone when absent, and clears it with [] or null', async () => {
    const { id } = await h.createTenant('hooks');
    const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin)
      .send({ httpAllowHosts: ['HTTPS://Hooks.Acme.com:443', 'https://*.partners.io:8443', 'http://10.0.0.5:8080', 'https://hooks.acme.com'] }).expect(200);
    expect(res.body).toMatchObject({ id, httpAllowHosts: ['https://hooks.acme.com', 'https://*.partners.io:8443', 'http://10.0.0.5:8080'] });
    const weighted = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ weight: 2 }).expect(200);
    expect(weighted.body).toMatchObject({ weight: 2, httpAllowHosts: ['https://hooks.acme.com', 'https://*.partners.io:8443', 'http://10.0.0.5:8080'] });
    expect((await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ httpAllowHosts: [] }).expect(200)).body.httpAllowHosts).toEqual([]);
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ httpAllowHosts: ['https://a.io'] }).expect(200);
    expect((await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ httpAllowHosts: null }).expect(200)).body.httpAllowHosts).toEqual([]);
  });

  it('sets emailAllowed (false by default) with the admin token only, and shows it in GET and PATCH answers', async () => {
    const { id, apiKey } = await h.createTenant('mailer');
    expect((await h.http().get(`/v1/admin/tenants/${id}`).set(admin).expect(200)).body).toMatchObject({ id, emailAllowed: false, httpAllowHosts: [] });
    expect((await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ emailAllowed: true }).expect(200)).body).toMatchObject({ id, emailAllowed: true });
    expect((await h.http().get(`/v1/admin/tenants/${id}`).set(admin).expect(200)).body.emailAllowed).toBe(true);
    // Left alone when absent; refused, changing nothing, when not a boolean.
    expect((await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ weight: 2 }).expect(200)).body.emailAllowed).toBe(true);
    for (const value of ['true', 1, null]) {
      const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ emailAllowed: value, weight: 3 }).expect(400);
      expect(res.body.details.map((d: { field: string }) => d.field)).toEqual(['emailAllowed']);
    }
    expect((await new TenantOutboundRepository(h.db.dataSource).forDelivery(id))!.emailAllowed).toBe(true);
    expect((await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ emailAllowed: false }).expect(200)).body.emailAllowed).toBe(false);
    await h.http().patch('/v1/admin/tenants/999999').set(admin).send({ emailAllowed: true }).expect(404);

    // A tenant's own key is not an admin token: it can neither allow itself nor read the setting.
    await h.http().patch(`/v1/admin/tenants/${id}`).set({ Authorization: `Bearer ${apiKey}` }).send({ emailAllowed: true }).expect(401);
    await h.http().get(`/v1/admin/tenants/${id}`).set({ Authorization: `Bearer ${apiKey}` }).expect(401);
    await h.http().patch(`/v1/admin/tenants/${id}`).send({ emailAllowed: true }).expect(401);
    expect((await new TenantOutboundRepository(h.db.dataSource).forDelivery(id))!.emailAllowed).toBe(false);
  });

  it('refuses a bad entry naming it by index, and changes nothing', async () => {
    const { id } = await h.createTenant('careful-hooks');
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ httpAllowHosts: ['https://kept.io'] }).expect(200);
    const cases: [unknown, string][] = [
      [['https://a.io', 'https://b.io', 'c.io'], 'httpAllowHosts[2]'], // no scheme
      [['https://a.io/path'], 'httpAllowHosts[0]'],
      [['https://a.io', 'ftp://b.io'], 'httpAllowHosts[1]'],
      [['https://*.io'], 'httpAllowHosts[0]'], // a wildcard over a whole top-level domain
      [['https://a.io', 5], 'httpAllowHosts[1]'],
      ['https://a.io', 'httpAllowHosts'],
      [Array.from({ length: 101 }, (_, i) => `https://h${i}.io`), 'httpAllowHosts'],
    ];
    for (const [hosts, field] of cases) {
      const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ httpAllowHosts: hosts, weight: 5 }).expect(400);
      expect(res.body.details.map((d: { field: string }) => d.field)).toEqual([field]);
    }
    expect((await new TenantOutboundRepository(h.db.dataSource).settings(id))?.httpAllowHosts).toEqual(['https://kept.io']);
    const [{ weight }] = await h.db.dataSource.query(`SELECT weight FROM tenants WHERE id = $1`, [id]);
    expect(Number(weight)).toBe(1);
  });

  it('rotates the signing secret: 201 with the secret once, the old one valid for the overlap, never listed', async () => {
    const { id } = await h.createTenant('signer');
    const first = await h.http().post(`/v1/admin/tenants/${id}/signing-secrets`).set(admin).expect(201);
    expect(first.body).toEqual({ id: expect.any(Number), createdAt: expect.any(String), expiresAt: null, secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/), previousExpiresAt: null });

    const second = await h.http().post(`/v1/admin/tenants/${id}/signing-secrets`).set(admin).send({ overlapSeconds: 3600 }).expect(201);
    const until = new Date(second.body.previousExpiresAt).getTime();
    expect(until).toBeGreaterThan(Date.now() + 3500_000);
    expect(until).toBeLessThan(Date.now() + 3700_000);
    const outbound = new TenantOutboundRepository(h.db.dataSource);
    expect((await outbound.forDelivery(id))!.secrets).toEqual([second.body.secret, first.body.secret]);

    const listed = await h.http().get(`/v1/admin/tenants/${id}/signing-secrets`).set(admin).expect(200);
    expect(listed.body.items.map((s: { id: number }) => s.id)).toEqual([second.body.id, first.body.id]);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    expect(listed.body.items[1].expiresAt).toBe(second.body.previousExpiresAt);

    // A leaked secret: overlap 0 retires the current one at once.
    const third = await h.http().post(`/v1/admin/tenants/${id}/signing-secrets`).set(admin).send({ overlapSeconds: 0 }).expect(201);
    expect(third.body.previousExpiresAt).toBeNull();
    expect((await outbound.forDelivery(id))!.secrets).toEqual([third.body.secret]);
  });

  it('refuses bad rotation bodies naming the field; 404 for a tenant that does not exist; 401 without the admin token', async () => {
    const { id } = await h.createTenant('signer-2');
    for (const [body, field] of [[{ overlapSeconds: -1 }, 'overlapSeconds'], [{ overlapSeconds: 604801 }, 'overlapSeconds'], [{ overlapSeconds: '60' }, 'overlapSeconds'], [{ overlap: 1 }, 'overlap']] as const) {
      const res = await h.http().post(`/v1/admin/tenants/${id}/signing-secrets`).set(admin).send(body).expect(400);
      expect(res.body.details.map((d: { field: string }) => d.field)).toEqual([field]);
    }
    expect(await new TenantOutboundRepository(h.db.dataSource).listSigningSecrets(id)).toEqual([]);
    await h.http().post('/v1/admin/tenants/999999/signing-secrets').set(admin).expect(404);
    await h.http().get('/v1/admin/tenants/999999/signing-secrets').set(admin).expect(404);
    await h.http().patch('/v1/admin/tenants/999999').set(admin).send({ httpAllowHosts: [] }).expect(404);
    await h.http().post(`/v1/admin/tenants/${id}/signing-secrets`).expect(401);
    await h.http().get(`/v1/admin/tenants/${id}/signing-secrets`).expect(401);
    // A tenant's own key is not an admin token: it cannot read or rotate secrets, its own or another's.
    const tenant = await h.createTenant('snoop');
    await h.http().post(`/v1/admin/tenants/${tenant.id}/signing-secrets`).set({ Authorization: `Bearer ${tenant.apiKey}` }).expect(401);
    await h.http().get(`/v1/admin/tenants/${id}/signing-secrets`).set({ Authorization: `Bearer ${tenant.apiKey}` }).expect(401);
  });
});
