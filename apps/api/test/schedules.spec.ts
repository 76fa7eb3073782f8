import { Clock } from '@almanac/platform';
import { ADMIN_TOKEN, type ApiHarness, startApi } from './api-harness';

describe('schedules (/v1/schedules)', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let tenantId: number;

  beforeAll(async () => {
    h = await startApi();
    const t = await h.createTenant();
    tenantId = t.id;
    auth = { Authorization: `Bearer ${t.apiKey}` };
  });
  afterAll(() => h.close());

  const body = { key: 'weekday-report', kind: 'http', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', payload: { url: 'https://reports.example.com/run?r=1' } };

  it('creates with next_run_at set, is idempotent by key, 409 on a different body', async () => {
    const created = await h.http().post('/v1/schedules').set(auth).send(body).expect(201);
    expect(created.body).toMatchObject({ key: 'weekday-report', cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', missed: 'skip', paused: false, version: 1 });
    expect(Date.parse(created.body.nextRunAt)).toBeGreaterThan(Date.now());
    const again = await h.http().post('/v1/schedules').set(auth).send(body).expect(200);
    expect(again.body.id).toBe(created.body.id);
    const diff = await h.http().post('/v1/schedules').set(auth).send({ ...body, cron: '0 10 * * *' }).expect(409);
    expect(diff.body.details[0]).toMatchObject({ field: 'key', rule: 'conflict' });
    expect(diff.body.message).toContain('cron');
  });

  it("a schedule made on a host whose clock runs fast starts at its first run after the database's now, not the host's", async () => {
    const ahead = jest.spyOn(h.app.get(Clock), 'now').mockImplementation(() => new Date(Date.now() + 2 * 60_000));
    try {
      const made = await h.http().post('/v1/schedules').set(auth).send({ key: 'fast-host', kind: 'http', cron: '* * * * *', timezone: 'UTC', payload: body.payload }).expect(201);
      const [{ now }] = await h.db.dataSource.query<{ now: Date }[]>('SELECT now()');
      // The next minute by the database (the host's would be two minutes on: its first runs skipped).
      expect(Date.parse(made.body.nextRunAt)).toBeLessThanOrEqual(now.getTime() + 60_000);
    } finally {
      ahead.mockRestore();
    }
  });

  it("refuses a tenant's schedule past its own maxSchedules with 403 naming the limit; a replay of an existing key still answers", async () => {
    const res = await h.http().post('/v1/admin/tenants').set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'small', maxSchedules: 2 }).expect(201);
    expect(res.body.maxSchedules).toBe(2);
    const small = { Authorization: `Bearer ${res.body.apiKey}` };
    await h.http().post('/v1/schedules').set(small).send({ ...body, key: 'q-1' }).expect(201);
    await h.http().post('/v1/schedules').set(small).send({ ...body, key: 'q-2' }).expect(201);
    const refused = await h.http().post('/v1/schedules').set(small).send({ ...body, key: 'q-3' }).expect(403);
    expect(refused.body.details[0]).toMatchObject({ field: 'schedules', rule: 'quota' });
    expect(refused.body.message).toMatch(/limit is 2/);
    await h.http().post('/v1/schedules').set(small).send({ ...body, key: 'q-1' }).expect(200);
    // Other tenants are not counted against it.
    await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'q-3' }).expect(201);
  });

  it('keeps expectWithinSeconds (1..86400, null clears it) and shows the latest watched outcome', async () => {
    const created = await h.http().post('/v1/schedules').set(auth).send({ key: 'expects', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', expectWithinSeconds: 300 }).expect(201);
    expect(created.body).toMatchObject({ expectWithinSeconds: 300, lastOutcome: null });
    const bad = await h.http().post('/v1/schedules').set(auth).send({ key: 'expects-bad', kind: 'noop', cron: '0 * * * *', timezone: 'UTC', expectWithinSeconds: 0 }).expect(400);
    expect(bad.body.details[0]).toMatchObject({ field: 'expectWithinSeconds' });
    await h.db.dataSource.query(`UPDATE schedules SET last_outcome = 'late', last_outcome_at = '2026-12-01T05:00:00Z' WHERE id = $1`, [created.body.id]);
    const read = await h.http().get(`/v1/schedules/${created.body.id}`).set(auth).expect(200);
    expect(read.body.lastOutcome).toEqual({ outcome: 'late', dueAt: '2026-12-01T05:00:00.000Z' });
    const cleared = await h.http().patch(`/v1/schedules/${created.body.id}`).set(auth).send({ expectWithinSeconds: null }).expect(200);
    expect(cleared.body.expectWithinSeconds).toBeNull();
  });

  it('validates cron and time zone, naming the field and rule (both at once)', async () => {
    const res = await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'bad', cron: '61 * * * *', timezone: 'Mars/Olympus' }).expect(400);
    const fields = res.body.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['cron', 'timezone']));
    const missing = await h.http().post('/v1/schedules').set(auth).send({ key: 'x' }).expect(400);
    expect(missing.body.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: 'kind', rule: 'required' }),
        expect.objectContaining({ field: 'cron', rule: 'required' }),
        expect.objectContaining({ field: 'timezone', rule: 'required' }),
      ]),
    );
    const n = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM schedules WHERE key IN ('bad', 'x')`);
    expect(n[0].n).toBe(0);
  });

  it('previews the next N occurrences in the schedule zone', async () => {
    const s = await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'preview', cron: '30 2 * * *' }).expect(201);
    const res = await h.http().get(`/v1/schedules/${s.body.id}/next?count=5`).set(auth).expect(200);
    expect(res.body.timezone).toBe('Europe/Berlin');
    expect(res.body.items).toHaveLength(5);
    for (const item of res.body.items) expect(item.local).toMatch(/^\d{4}-\d{2}-\d{2}T02:30:00\+0[12]:00$/);
    await h.http().get(`/v1/schedules/${s.body.id}/next?count=1000`).set(auth).expect(400);
  });

  it('a cron change bumps version, recomputes next_run_at and removes not-yet-run occurrences (only this schedule\'s)', async () => {
    const s = await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'changing' }).expect(201);
    const id: string = s.body.id;
    const other = await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'other' }).expect(201);
    // Occurrence rows as the promoter would have materialised them.
    const insert = (key: string, state: string) =>
      h.db.dataSource.query(`INSERT INTO jobs (tenant_id, key, kind, run_at, state) VALUES ($1, $2, 'http', now() + interval '2 days', $3)`, [tenantId, key, state]);
    await insert(`schedule:${id}:2030-01-01T08:00:00Z`, 's');
    await insert(`schedule:${id}:2030-01-02T08:00:00Z`, 'q');
    await insert(`schedule:${id}:2020-01-01T08:00:00Z`, 'd');
    await insert(`schedule:${id}0:2030-01-01T08:00:00Z`, 's'); // schedule id*10: outside the key range
    await insert(`schedule:${other.body.id}:2030-01-01T08:00:00Z`, 's');
    const res = await h.http().patch(`/v1/schedules/${id}`).set(auth).send({ cron: '0 7 * * *' }).expect(200);
    expect(res.body).toMatchObject({ version: 2, cron: '0 7 * * *', removedOccurrences: 2 });
    expect(res.body.nextRunAt).not.toBe(s.body.nextRunAt);
    const left = await h.db.dataSource.query(`SELECT key FROM jobs WHERE key LIKE 'schedule:%' ORDER BY key`);
    expect(left.map((r: { key: string }) => r.key)).toEqual([
      `schedule:${id}:2020-01-01T08:00:00Z`,
      `schedule:${id}0:2030-01-01T08:00:00Z`,
      `schedule:${other.body.id}:2030-01-01T08:00:00Z`,
    ].sort());
    // Payload-only change: same version, nothing removed.
    const p = await h.http().patch(`/v1/schedules/${id}`).set(auth).send({ payload: { url: 'https://reports.example.com/run?r=2' } }).expect(200);
    expect(p.body).toMatchObject({ version: 2, removedOccurrences: 0, payload: { url: 'https://reports.example.com/run?r=2' } });
    // A payload the schedule's kind (http) would refuse is refused now, not at its next run.
    const bad = await h.http().patch(`/v1/schedules/${id}`).set(auth).send({ payload: { r: 2 } }).expect(400);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['payload.r', 'payload.url']);
    // A null payload is checked too (not the stored one in its place).
    const cleared = await h.http().patch(`/v1/schedules/${id}`).set(auth).send({ payload: null }).expect(400);
    expect(cleared.body.details[0]).toMatchObject({ field: 'payload', rule: 'schema_type' });
    await h.http().patch(`/v1/schedules/${id}`).set(auth).send({ timezone: 'Nowhere/Land' }).expect(400);
  });

  it('concurrent PATCHes of cron and of timezone both land (no lost update)', async () => {
    const created = await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'race', cron: '0 9 * * *', timezone: 'UTC' }).expect(201);
    const id = created.body.id as string;
    for (const [hour, zone] of [[10, 'Europe/Berlin'], [11, 'America/New_York'], [12, 'Asia/Tokyo']] as const) {
      const [a, b] = await Promise.all([
        h.http().patch(`/v1/schedules/${id}`).set(auth).send({ cron: `0 ${hour} * * *` }),
        h.http().patch(`/v1/schedules/${id}`).set(auth).send({ timezone: zone }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      const now = await h.http().get(`/v1/schedules/${id}`).set(auth).expect(200);
      expect(now.body).toMatchObject({ cron: `0 ${hour} * * *`, timezone: zone });
    }
  });

  it('pause (nothing materialised yet) keeps next_run_at, resume clears paused; delete removes it; other tenants get 404', async () => {
    const s = await h.http().post('/v1/schedules').set(auth).send({ ...body, key: 'pausable' }).expect(201);
    const paused = await h.http().post(`/v1/schedules/${s.body.id}/pause`).set(auth).expect(200);
    expect(paused.body).toMatchObject({ paused: true, nextRunAt: s.body.nextRunAt, lastError: null, removedOccurrences: 0 });
    // Paused by the recurring sweep instead (a value Postgres refused): the reason shows until resumed.
    await h.db.dataSource.query(`UPDATE schedules SET last_error = 'SetAsideError: refused (SQLSTATE 22003)' WHERE id = $1`, [s.body.id]);
    expect((await h.http().get(`/v1/schedules/${s.body.id}`).set(auth).expect(200)).body).toMatchObject({ paused: true, lastError: 'SetAsideError: refused (SQLSTATE 22003)' });
    const resumed = await h.http().post(`/v1/schedules/${s.body.id}/resume`).set(auth).expect(200);
    expect(resumed.body).toMatchObject({ paused: false, lastError: null });
    const otherKey = (await h.createTenant('other')).apiKey;
    const other = { Authorization: `Bearer ${otherKey}` };
    await h.http().get(`/v1/schedules/${s.body.id}`).set(other).expect(404);
    await h.http().delete(`/v1/schedules/${s.body.id}`).set(other).expect(404);
    await h.http().post(`/v1/schedules/${s.body.id}/pause`).set(other).expect(404);
    await h.http().delete(`/v1/schedules/${s.body.id}`).set(auth).expect(200);
    await h.http().get(`/v1/schedules/${s.body.id}`).set(auth).expect(404);
    await h.http().get(`/v1/schedules/not-a-number`).set(auth).expect(404);
  });

  it('lists by key with a cursor', async () => {
    const keys: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { items: { key: string }[]; nextCursor: string | null } } = await h.http().get('/v1/schedules').query(cursor ? { limit: 2, cursor } : { limit: 2 }).set(auth).expect(200);
      keys.push(...res.body.items.map((s: { key: string }) => s.key));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(keys).toEqual([...keys].sort());
    expect(keys).toEqual(expect.arrayContaining(['weekday-report', 'preview', 'changing', 'other']));
  });
});
