import { ADMIN_TOKEN, type ApiHarness, DAY, inMs, startApi } from './api-harness';

describe('retention through the API: a tenant’s setting, and a replay of a removed job’s key', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(() => h.close());

  /** What the retention sweep leaves for a removed key (the sweep's own spec covers writing it). */
  const retire = (tenantId: number, key: string, day: string, state: string, through: string | null = null) =>
    h.db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through) VALUES ($1, $2, $3, $4, $5)`, [
      tenantId,
      key,
      day,
      state,
      through,
    ]);

  it('sets and shows retentionSeconds and keysAfterRetention; refuses bad values naming the field', async () => {
    const { id } = await h.createTenant('keeper');
    const shown = await h.http().get(`/v1/admin/tenants`).set(admin).expect(200);
    expect(shown.body.items.find((t: { id: number }) => t.id === id)).toMatchObject({ retentionSeconds: null, keysAfterRetention: 'reserved', keyReservationSeconds: null });
    const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ retentionSeconds: 90 * 86_400, keysAfterRetention: 'freed' }).expect(200);
    expect(res.body).toMatchObject({ id, retentionSeconds: 90 * 86_400, keysAfterRetention: 'freed', weight: 1 });
    const back = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ retentionSeconds: null }).expect(200);
    expect(back.body).toMatchObject({ retentionSeconds: null, keysAfterRetention: 'freed' });
    for (const [body, field] of [
      [{ retentionSeconds: 60 }, 'retentionSeconds'],
      [{ retentionSeconds: 3600.5 }, 'retentionSeconds'],
      [{ retentionSeconds: '30d' }, 'retentionSeconds'],
      [{ keysAfterRetention: 'forgotten' }, 'keysAfterRetention'],
      [{ keyReservationSeconds: 3600 }, 'keyReservationSeconds'],
      [{ keyReservationSeconds: 'always' }, 'keyReservationSeconds'],
    ] as const) {
      const bad = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send(body).expect(400);
      expect(bad.body.details).toEqual([expect.objectContaining({ field })]);
    }
    const after = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ weight: 1 }).expect(200);
    expect(after.body).toMatchObject({ retentionSeconds: null, keysAfterRetention: 'freed' });
    for (const keyReservationSeconds of [30 * 86_400, 'forever', null]) {
      const set = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ keyReservationSeconds }).expect(200);
      expect(set.body).toMatchObject({ keyReservationSeconds, keysAfterRetention: 'freed' });
    }
  });

  it('answers a replay of a retired key with 409 saying when its job was removed and how it ended, alone or in a batch', async () => {
    const { id, apiKey } = await h.createTenant('replayer');
    const other = await h.createTenant('neighbour');
    await retire(id, 'invoice:2026-10', '2026-11-02', 'd');
    const auth = { Authorization: `Bearer ${apiKey}` };
    const body = { kind: 'noop', key: 'invoice:2026-10', runAt: inMs(DAY) };

    const one = await h.http().post('/v1/jobs').set(auth).send(body).expect(409);
    expect(one.body.message).toBe('key "invoice:2026-10" named a job that ended succeeded and was removed by retention on 2026-11-02; the key stays reserved for good');
    await retire(id, 'invoice:2026-09', '2026-10-02', 'x', '2099-11-06');
    const until = await h.http().post('/v1/jobs').set(auth).send({ ...body, key: 'invoice:2026-09' }).expect(409);
    expect(until.body.message).toMatch(/ended dead and was removed by retention on 2026-10-02; the key stays reserved through 2099-11-06 \(UTC\)$/);
    expect(one.body.details).toEqual([expect.objectContaining({ field: 'key', rule: 'retired' })]);

    const batch = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [{ ...body, key: 'invoice:2026-12' }, body] }).expect(200);
    expect(batch.body).toMatchObject({ created: 1, errors: 1 });
    expect(batch.body.results[1]).toMatchObject({ index: 1, status: 'error', error: { statusCode: 409, details: [expect.objectContaining({ rule: 'retired' })] } });
    // The reservation is the tenant's own: another tenant's key of the same text is new.
    await h.http().post('/v1/jobs').set({ Authorization: `Bearer ${other.apiKey}` }).send(body).expect(201);
  });
});
