import { createAdminClient, createClient, NotFoundError, UnauthorizedError, ValidationError } from '@almanac/client';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

/** @almanac/client's admin client against the real api role: tenants, keys, signing secrets. */
describe('@almanac/client: admin', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  it('creates, lists and changes tenants; rotates keys and signing secrets', async () => {
    const admin = createAdminClient({ baseUrl: h.url, adminToken: ADMIN_TOKEN });
    const acme = await admin.tenants.create({ name: 'acme', rateLimitPerSecond: 500 });
    expect(acme).toMatchObject({ name: 'acme', rateLimitPerSecond: 500, apiKey: expect.stringMatching(/^alm_/) });
    await admin.tenants.create({ name: 'globex' });

    const names: string[] = [];
    for await (const t of admin.tenants.iterate()) names.push(t.name);
    expect(names).toEqual(['acme', 'globex']);
    expect(await admin.tenants.list({ limit: 1 })).toMatchObject({ items: [{ name: 'acme', keys: 1 }], nextCursor: String(acme.id) });

    const changed = await admin.tenants.update(acme.id, { weight: 3, kindLimits: { http: { perSecond: 50 } }, httpAllowHosts: ['https://hooks.acme.com'] });
    expect(changed).toMatchObject({ weight: 3, kindLimits: { http: { perSecond: 50 } }, httpAllowHosts: ['https://hooks.acme.com'] });
    const bad = await admin.tenants.update(acme.id, { weight: -1 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).fields).toEqual(['weight']);
    await expect(admin.tenants.update(999_999, { weight: 2 })).rejects.toBeInstanceOf(NotFoundError);
    await admin.tenants.update(acme.id, { maxStoredBytes: 2 ** 30 });
    expect(await admin.tenants.get(acme.id)).toMatchObject({ weight: 3, httpAllowHosts: ['https://hooks.acme.com'], storage: { storedBytes: 0, quotaBytes: 2 ** 30, measuredAt: null } });
    await expect(admin.tenants.get(999_999)).rejects.toBeInstanceOf(NotFoundError);

    const second = await admin.keys.create(acme.id);
    expect((await admin.keys.list(acme.id)).map((k) => k.id)).toContain(second.id);
    await createClient({ baseUrl: h.url, apiKey: second.apiKey }).jobs.list();
    await admin.keys.revoke(acme.id, second.id);
    await expect(createClient({ baseUrl: h.url, apiKey: second.apiKey }).jobs.list()).rejects.toBeInstanceOf(UnauthorizedError);

    const secret = await admin.signingSecrets.rotate(acme.id, { overlapSeconds: 0 });
    expect(secret).toMatchObject({ secret: expect.any(String), expiresAt: null });
    expect((await admin.signingSecrets.list(acme.id))[0]).toEqual({ id: secret.id, createdAt: secret.createdAt, expiresAt: null });

    const wrongToken = createAdminClient({ baseUrl: h.url, adminToken: 'not-the-admin-token-0123' });
    await expect(wrongToken.tenants.list()).rejects.toBeInstanceOf(UnauthorizedError);
  });
});
