import { TenantStatsRepository } from '@almanac/persistence';
import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN, type ApiHarness, inMs, MINUTE, startApi } from './api-harness';

const KIB = 1024;
const MIB = 1024 * KIB;
/** An incompressible payload of about `n` bytes as JSON text. */
const payload = (n: number) => ({ blob: randomBytes(n).toString('base64').slice(0, n - 12) });

describe('stored-bytes quota: what a tenant stores, reported and bounded (issue 33 item 4)', () => {
  let h: ApiHarness;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    // Every request reads its tenant afresh, so a measured figure applies to the next request.
    // Payloads up to 512 KiB, so a few fill a 1 MiB quota.
    h = await startApi({ ALMANAC_AUTH_CACHE_TTL_MS: '0', ALMANAC_RATE_LIMIT_PER_SECOND: '0', ALMANAC_MAX_PAYLOAD_BYTES: String(512 * KIB) });
  });
  afterAll(() => h.close());

  /** One whole pass of the promoter's stored-bytes sweep. */
  async function measure(): Promise<void> {
    const stats = new TenantStatsRepository(h.db.dataSource);
    for (let i = 0; i < 100; i++) if ((await stats.measureStoredBytes(1000)).published) return;
    throw new Error('no pass finished');
  }

  it('refuses with 413 and the figures what would pass the quota, keeps what was accepted, and reports it', async () => {
    const { id, apiKey } = await h.createTenant('quota');
    const other = await h.createTenant('other');
    const auth = { Authorization: `Bearer ${apiKey}` };
    const patched = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: MIB }).expect(200);
    expect(patched.body.storage).toEqual({ storedBytes: 0, quotaBytes: MIB, maxStoredBytes: MIB, measuredAt: null });

    // A batch bigger than the quota by itself: refused whole, nothing written.
    const big = Array.from({ length: 20 }, (_, i) => ({ kind: 'noop', key: `big-${i}`, runAt: inMs(MINUTE), payload: payload(60_000) }));
    const refused = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: big }).expect(413);
    expect(refused.body.details).toEqual([expect.objectContaining({ field: 'tenant', rule: 'stored_bytes_quota' })]);
    expect(refused.body.message).toMatch(/stores 0 bytes and this request adds 1\d{6}; its quota is 1048576 bytes/);
    await h.http().get('/v1/jobs?key=big-0').set(auth).expect(404);

    // 17 × 60,000 B fits; once measured, two more do not, but a job without a payload does.
    const fits = Array.from({ length: 17 }, (_, i) => ({ kind: 'noop', key: `fits-${i}`, runAt: inMs(MINUTE), payload: payload(60_000) }));
    expect((await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: fits }).expect(200)).body.created).toBe(17);
    await measure();
    const report = await h.http().get(`/v1/admin/tenants/${id}`).set(admin).expect(200);
    expect(report.body.storage.storedBytes).toBeGreaterThanOrEqual(17 * 59_900);
    expect(report.body.storage.storedBytes).toBeLessThan(17 * 60_100);
    expect(Date.parse(report.body.storage.measuredAt)).toBeGreaterThan(Date.now() - MINUTE);

    await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: big.slice(0, 2) }).expect(413);
    // A resend of what was accepted adds nothing: answered as the replay it is, past the quota.
    expect((await h.http().post('/v1/jobs').set(auth).send(fits[0]).expect(200)).body.key).toBe('fits-0');
    expect((await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: fits.slice(0, 3) }).expect(200)).body.existing).toBe(3);
    const one = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'one-more', runAt: inMs(MINUTE), payload: payload(60_000) }).expect(413);
    expect(one.body.message).toContain(`stores ${report.body.storage.storedBytes} bytes`);
    await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'no-payload', runAt: inMs(MINUTE) }).expect(201);
    // Schedules count too: a payload past the quota is refused at create and at PATCH.
    await h.http().post('/v1/schedules').set(auth).send({ key: 's', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', payload: payload(60_000) }).expect(413);
    const s = await h.http().post('/v1/schedules').set(auth).send({ key: 's', kind: 'noop', cron: '0 * * * *', timezone: 'UTC' }).expect(201);
    const withPayload = { key: 's-big', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', payload: payload(60_000) };
    await h.db.dataSource.query(`UPDATE tenants SET max_stored_bytes = NULL WHERE id = $1`, [id]); // room for one more, then the quota back
    await h.http().post('/v1/schedules').set(auth).send(withPayload).expect(201);
    await h.db.dataSource.query(`UPDATE tenants SET max_stored_bytes = $2 WHERE id = $1`, [id, MIB]);
    await h.http().post('/v1/schedules').set(auth).send(withPayload).expect(200); // its resend: a replay, not 413
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ payload: payload(60_000) }).expect(413);

    // What was accepted is all there; another tenant is not affected.
    for (let i = 0; i < 17; i++) await h.http().get(`/v1/jobs?key=fits-${i}`).set(auth).expect(200);
    await h.http().post('/v1/jobs').set({ Authorization: `Bearer ${other.apiKey}` }).send({ kind: 'noop', key: 'x', runAt: inMs(MINUTE), payload: payload(60_000) }).expect(201);

    // Back to the installation's default (10 GiB): accepted again.
    const reset = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: null }).expect(200);
    expect(reset.body.storage).toMatchObject({ quotaBytes: 10 * 1024 * MIB, maxStoredBytes: null });
    expect((await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: big.slice(0, 2) }).expect(200)).body.created).toBe(2);
  });

  it('over its quota, a tenant is still answered what adds nothing: resends, replays of retired keys, a schedule\'s payload as stored or removed', async () => {
    const { id, apiKey } = await h.createTenant('over-quota');
    const auth = { Authorization: `Bearer ${apiKey}` };
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: MIB }).expect(200);
    const job = { kind: 'noop', key: 'kept', runAt: inMs(MINUTE), payload: payload(1000) };
    await h.http().post('/v1/jobs').set(auth).send(job).expect(201);
    await h.db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state, reserved_through) VALUES ($1, 'gone', '2026-11-02', 'd', NULL)`, [id]);
    const schedule = { key: 's', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', payload: payload(5000) };
    const s = await h.http().post('/v1/schedules').set(auth).send(schedule).expect(201);
    const bare = await h.http().post('/v1/schedules').set(auth).send({ key: 'bare', kind: 'noop', cron: '0 * * * *', timezone: 'UTC' }).expect(201);
    // As the stored-bytes sweep would find it after, say, a lowered quota: over by a whole MiB.
    await h.db.dataSource.query(`UPDATE tenants SET stored_bytes = $2, stored_bytes_at = now() WHERE id = $1`, [id, 2 * MIB]);

    expect((await h.http().post('/v1/jobs').set(auth).send(job).expect(200)).body.key).toBe('kept');
    expect((await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [job] }).expect(200)).body.existing).toBe(1);
    const replayed = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'gone', runAt: inMs(MINUTE), replay: 'result' }).expect(200);
    expect(replayed.body).toMatchObject({ removed: true, key: 'gone' });
    expect((await h.http().post('/v1/schedules').set(auth).send(schedule).expect(200)).body.id).toBe(s.body.id);
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ payload: schedule.payload }).expect(200); // as stored: a sync tool's resend
    // A new payload, even a smaller one, is refused: the one it replaces stays stored while the runs
    // retention keeps carry it, and twenty same-size PATCHes took a tenant to twice its quota (review).
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ payload: payload(5000) }).expect(413);
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ payload: payload(2000) }).expect(413);
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ payload: null }).expect(200);
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ maxAttempts: 5 }).expect(200);

    // Anything new is refused, however small: a new key, or a payload where there was none.
    const refused = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'new', runAt: inMs(MINUTE) }).expect(413);
    expect(refused.body.details).toEqual([expect.objectContaining({ field: 'tenant', rule: 'stored_bytes_quota' })]);
    await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [job, { kind: 'noop', key: 'new', runAt: inMs(MINUTE) }] }).expect(413);
    await h.http().post('/v1/schedules').set(auth).send({ ...schedule, key: 's-new' }).expect(413);
    await h.http().patch(`/v1/schedules/${bare.body.id}`).set(auth).send({ payload: { x: 1 } }).expect(413);
    await h.http().patch(`/v1/schedules/${s.body.id}`).set(auth).send({ payload: payload(100) }).expect(413); // null before: it grows
  });

  it('counts what it accepted since the last measurement, and starts again at the next one', async () => {
    const { id, apiKey } = await h.createTenant('between-passes');
    const auth = { Authorization: `Bearer ${apiKey}` };
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: MIB }).expect(200);
    const big = payload(100 * KIB);
    const job = (key: string) => ({ kind: 'noop', key, runAt: inMs(MINUTE), payload: big });
    /** Posts 100 KiB jobs one after another until one is refused; how many were created. */
    const fill = async (prefix: string): Promise<number> => {
      for (let i = 0; i < 30; i++) {
        const res = await h.http().post('/v1/jobs').set(auth).send(job(`${prefix}-${i}`));
        if (res.status === 413) return i;
        expect(res.status).toBe(201);
      }
      return Infinity;
    };
    // Resends are charged while they wait for their commit, and given back as the replays they are.
    const resent = job('resent');
    await h.http().post('/v1/jobs').set(auth).send(resent).expect(201);
    for (let i = 0; i < 5; i++) await h.http().post('/v1/jobs').set(auth).send(resent).expect(200);
    // Never measured (stored 0): ten fit in 1 MiB, the eleventh does not.
    expect(await fill('a')).toBe(9);
    // A pass measures those ten; what was counted before it is not added again.
    await measure();
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: 2 * MIB }).expect(200);
    expect(await fill('b')).toBe(10);
  });

  it('charges a key repeated in one batch once, as it is stored once', async () => {
    const { id, apiKey } = await h.createTenant('repeated-key');
    const auth = { Authorization: `Bearer ${apiKey}` };
    await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: MIB }).expect(200);
    await h.db.dataSource.query(`UPDATE tenants SET stored_bytes = $2, stored_bytes_at = now() WHERE id = $1`, [id, 400 * KIB]);
    const job = { kind: 'noop', key: 'twice', runAt: inMs(MINUTE), payload: payload(400 * KIB) };
    const res = await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [job, job] }).expect(200);
    expect(res.body).toMatchObject({ created: 1, existing: 1, errors: 0 });
  });

  it('refuses a bad quota naming the field', async () => {
    const { id } = await h.createTenant('bad-quota');
    for (const bad of [1000, 1.5, '2000000', 2 ** 60]) {
      const res = await h.http().patch(`/v1/admin/tenants/${id}`).set(admin).send({ maxStoredBytes: bad }).expect(400);
      expect(res.body.details).toEqual([expect.objectContaining({ field: 'maxStoredBytes', rule: 'range' })]);
    }
    await h.http().get('/v1/admin/tenants/999999').set(admin).expect(404);
    await h.http().get(`/v1/admin/tenants/${id}`).expect(401);
  });
});
