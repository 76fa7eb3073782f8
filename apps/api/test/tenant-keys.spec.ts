import { TenantKeysRepository } from '@almanac/persistence';
import { TenantAuthService } from '../src/auth/tenant-auth.service';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

/** Polls `probe` until it answers `status`, for at most `withinMs`; returns how long it took. */
async function becomes(probe: () => Promise<{ status: number }>, status: number, withinMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if ((await probe()).status === status) return Date.now() - t0;
    if (Date.now() - t0 > withinMs) throw new Error(`not ${status} within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('tenant keys and suspension: every API replica follows within a second', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  it('a tenant holds several keys; a revoked key is refused with 401 on every replica within 1 s, the others keep working', async () => {
    const b = await h.replica();
    const { id, apiKey: first } = await h.createTenant('rotating');
    const made = await h.http().post(`/v1/admin/tenants/${id}/keys`).set(admin).expect(201);
    const second = made.body.apiKey as string;
    expect(made.body).toMatchObject({ id: expect.any(Number), prefix: second.slice(0, 10), revokedAt: null });
    // Both keys work on both replicas (each replica now has them cached).
    for (const key of [first, second]) {
      for (const http of [h.http, b.http]) await http().get('/v1/jobs').set('Authorization', `Bearer ${key}`).expect(200);
    }
    const listed = await h.http().get(`/v1/admin/tenants/${id}/keys`).set(admin).expect(200);
    expect(listed.body.items).toHaveLength(2);
    expect(JSON.stringify(listed.body)).not.toContain(second.slice(10)); // never the key itself
    const firstId = listed.body.items[0].id as number;
    // The same envelope as every list, page by page.
    const one = await h.http().get(`/v1/admin/tenants/${id}/keys`).query({ limit: 1 }).set(admin).expect(200);
    expect(one.body).toMatchObject({ items: [{ id: firstId }], nextCursor: String(firstId) });
    const rest = await h.http().get(`/v1/admin/tenants/${id}/keys`).query({ limit: 1, cursor: one.body.nextCursor }).set(admin).expect(200);
    expect(rest.body.items.map((k: { id: number }) => k.id)).toEqual([listed.body.items[1].id]);

    await h.http().delete(`/v1/admin/tenants/${id}/keys/${firstId}`).set(admin).expect(204);
    await h.http().get('/v1/jobs').set('Authorization', `Bearer ${first}`).expect(401); // this replica: at once
    const took = await becomes(() => b.http().get('/v1/jobs').set('Authorization', `Bearer ${first}`), 401, 1000);
    expect(took).toBeLessThan(1000);
    await b.http().get('/v1/jobs').set('Authorization', `Bearer ${second}`).expect(200);
    const after = await h.http().get(`/v1/admin/tenants/${id}/keys`).set(admin).expect(200);
    expect(after.body.items[0].revokedAt).not.toBeNull();
    // Revoking again answers the same; another tenant's key id is a 404.
    await h.http().delete(`/v1/admin/tenants/${id}/keys/${firstId}`).set(admin).expect(204);
    const other = await h.createTenant('other');
    await h.http().delete(`/v1/admin/tenants/${other.id}/keys/${firstId}`).set(admin).expect(404);
    await h.http().post('/v1/admin/tenants/999999/keys').set(admin).expect(404);
    await h.http().get('/v1/admin/tenants/999999/keys').set(admin).expect(404);
  });

  it('a suspended tenant gets 403 with a message on every replica within 1 s, and is let in again once enabled', async () => {
    const b = await h.replica();
    const { id, apiKey } = await h.createTenant('suspendable');
    const auth = { Authorization: `Bearer ${apiKey}` };
    await b.http().get('/v1/jobs').set(auth).expect(200);
    const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ disabled: true }).expect(200);
    expect(res.body.disabled).toBe(true);
    const refused = await h.http().get('/v1/jobs').set(auth).expect(403);
    expect(refused.body.details[0]).toMatchObject({ field: 'authorization', rule: 'suspended' });
    expect(await becomes(() => b.http().get('/v1/jobs').set(auth), 403, 1000)).toBeLessThan(1000);
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ disabled: false }).expect(200);
    await becomes(() => b.http().get('/v1/jobs').set(auth), 200, 1000);
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ disabled: 'yes' }).expect(400);
  });

  it('lists tenants with their keys and job counts, page by page', async () => {
    const { id, apiKey } = await h.createTenant('counted');
    const jobs = Array.from({ length: 3 }, (_, i) => ({ kind: 'noop', key: `c-${i}`, runAt: new Date(Date.now() + 86_400_000).toISOString() }));
    await h.http().post('/v1/jobs/batch').set('Authorization', `Bearer ${apiKey}`).send({ jobs }).expect(200);
    const all: { id: number; jobs: number; keys: number; jobsAtLeast: boolean }[] = [];
    let cursor: string | null = '0';
    while (cursor !== null) {
      const page: { body: { items: typeof all; nextCursor: string | null } } = await h.http().get('/v1/admin/tenants').query({ cursor, limit: 2 }).set(admin).expect(200);
      all.push(...page.body.items);
      cursor = page.body.nextCursor;
    }
    expect(all.find((t) => t.id === id)).toMatchObject({ jobs: 3, keys: 1, jobsAtLeast: false });
    expect(new Set(all.map((t) => t.id)).size).toBe(all.length);
    await h.http().get('/v1/admin/tenants').query({ limit: 0 }).set(admin).expect(400);
  });

  it("records a key's last use, at most once a minute per replica", async () => {
    const { id, apiKey } = await h.createTenant('used');
    await h.http().get('/v1/jobs').set('Authorization', `Bearer ${apiKey}`).expect(200);
    await h.app.get(TenantAuthService).flushLastUsed();
    const [key] = (await h.app.get(TenantKeysRepository).list(id)) ?? [];
    expect(key.lastUsedAt).not.toBeNull();
  });
});
