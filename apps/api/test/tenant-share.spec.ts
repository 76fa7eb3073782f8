import { TenantsRepository } from '@almanac/persistence';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

describe('PATCH /v1/admin/tenants/:id: a tenant’s share of busy pools and its limits', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  it('sets weight, maxConcurrency and kindLimits, and the dispatcher’s read sees only tenants off the default', async () => {
    const { id } = await h.createTenant('heavy');
    await h.createTenant('plain');
    const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin)
      .send({ weight: 3, maxConcurrency: 100, kindLimits: { http: { perSecond: 50, concurrency: 20 } } }).expect(200);
    expect(res.body).toMatchObject({ id, name: 'heavy', weight: 3, maxConcurrency: 100, kindLimits: { http: { perSecond: 50, concurrency: 20 } } });
    // A field left out stays as it was; null removes a limit.
    const res2 = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxConcurrency: null }).expect(200);
    expect(res2.body).toMatchObject({ weight: 3, maxConcurrency: null, kindLimits: { http: { perSecond: 50 } } });
    const shares = await h.app.get(TenantsRepository).listShares();
    expect([...shares.keys()]).toEqual([id]);
    expect(shares.get(id)).toEqual({ weight: 3, maxConcurrency: null, kindLimits: { http: { perSecond: 50, concurrency: 20 } }, held: false });
    // The bounds themselves are valid (a `real` column once refused 0.01 against its own CHECK: a 500).
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ weight: 0.01 }).expect(200);
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ weight: 1000 }).expect(200);
  });

  it('refuses bad values naming the field, and changes nothing', async () => {
    const { id } = await h.createTenant('careful');
    const cases: [unknown, string][] = [
      [{ weight: 0 }, 'weight'],
      [{ weight: 'x' }, 'weight'],
      [{ maxConcurrency: 1.5 }, 'maxConcurrency'],
      [{ kindLimits: { http: { perSecond: -1 } } }, 'kindLimits.http.perSecond'],
      [{ kindLimits: { http: { rps: 5 } } }, 'kindLimits.http.rps'],
      [{ kindLimits: { 'Bad Kind': { concurrency: 1 } } }, 'kindLimits.Bad Kind'],
      [{ kindLimits: { http: {} } }, 'kindLimits.http'],
      [{ priority: 1 }, 'priority'],
      [{}, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send(body as object).expect(400);
      expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    const tenant = await h.app.get(TenantsRepository).findById(id);
    expect(tenant?.share).toEqual({ weight: 1, maxConcurrency: null, kindLimits: null, held: false });
  });

  it('answers 404 for a tenant that does not exist, and 401 without the admin token', async () => {
    await h.http().patch('/v1/admin/tenants/999999').set(admin).send({ weight: 2 }).expect(404);
    await h.http().patch('/v1/admin/tenants/abc').set(admin).send({ weight: 2 }).expect(404);
    await h.http().patch('/v1/admin/tenants/1').send({ weight: 2 }).expect(401);
  });
});
