import { type ApiHarness, startApi } from './api-harness';

/** GET /v1/schedules/:id/runs: "did the 02:00 Europe/Berlin run happen on 11 November?" in one call. */
describe('schedule runs (/v1/schedules/:id/runs)', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let tenantId: number;
  let id: string;

  beforeAll(async () => {
    h = await startApi();
    const t = await h.createTenant();
    tenantId = t.id;
    auth = { Authorization: `Bearer ${t.apiKey}` };
    const created = await h.http().post('/v1/schedules').set(auth).send({ key: 'nightly', kind: 'noop', cron: '0 2 * * *', timezone: 'Europe/Berlin' }).expect(201);
    id = created.body.id as string;
    await h.db.dataSource.query(`UPDATE schedules SET created_at = '2026-11-01T00:00:00Z' WHERE id = $1`, [id]);
    // 02:00 in Berlin is 01:00 UTC in November. The 10th ran 3 s late and succeeded; the 11th
    // failed for good; the 12th has no job (skipped); the 13th's job was removed by retention.
    const occurrence = async (day: string, state: string, startedLateMs: number | null, lastError: string | null) => {
      const at = `2026-11-${day}T01:00:00Z`;
      const [{ id: jobId }] = await h.db.dataSource.query(
        `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts, finished_at, result, last_error)
         VALUES ($1, $2, 'noop', $3, $4, 1, $3::timestamptz + interval '5 seconds', $5, $6) RETURNING id::text AS id`,
        [tenantId, `schedule:${id}:2026-11-${day}T01:00:00Z`, at, state, state === 'd' ? '{"rows":12}' : null, lastError],
      );
      if (startedLateMs !== null) {
        await h.db.dataSource.query(
          `INSERT INTO job_attempts (job_id, tenant_id, attempt, started_at, finished_at, outcome, error) VALUES ($1, $2, 1, $3::timestamptz + $4 * interval '1 millisecond', $3::timestamptz + interval '5 seconds', $5, $6)`,
          [jobId, tenantId, at, startedLateMs, state === 'd' ? 'succeeded' : 'discarded', lastError],
        );
      }
    };
    await occurrence('10', 'd', 3000, null);
    await occurrence('11', 'x', 40, 'upstream refused the report');
    await h.db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) VALUES ($1, $2, '2026-11-20', 'd')`, [tenantId, `schedule:${id}:2026-11-13T01:00:00Z`]);
  });
  afterAll(() => h.close());

  it('answers for a local day: the run, when it started, how late, what it returned', async () => {
    const res = await h.http().get(`/v1/schedules/${id}/runs`).query({ date: '2026-11-10' }).set(auth).expect(200);
    expect(res.body).toEqual({
      timezone: 'Europe/Berlin',
      nextCursor: null,
      items: [expect.objectContaining({
        at: '2026-11-10T01:00:00.000Z', local: '2026-11-10T02:00:00+01:00', state: 'succeeded', attempts: 1,
        startedAt: '2026-11-10T01:00:03.000Z', lateMs: 3000, result: { rows: 12 }, reason: null,
      })],
    });
  });

  it('lists a window oldest first: succeeded, dead with its error, skipped, removed, with a cursor past the limit', async () => {
    const q = { from: '2026-11-09T12:00', to: '2026-11-13T12:00' }; // local to the schedule's zone
    const res = await h.http().get(`/v1/schedules/${id}/runs`).query(q).set(auth).expect(200);
    expect(res.body.items.map((r: { state: string }) => r.state)).toEqual(['succeeded', 'dead', 'skipped', 'removed']);
    expect(res.body.items[1]).toMatchObject({ error: 'upstream refused the report', errorCode: 'handler', lateMs: 40 });
    expect(res.body.items[2].reason).toContain('missed-run policy');
    expect(res.body.items[3].reason).toContain('removed by retention on 2026-11-20');
    const first = await h.http().get(`/v1/schedules/${id}/runs`).query({ ...q, limit: 2 }).set(auth).expect(200);
    expect(first.body.items.map((r: { at: string }) => r.at)).toEqual(['2026-11-10T01:00:00.000Z', '2026-11-11T01:00:00.000Z']);
    const next = await h.http().get(`/v1/schedules/${id}/runs`).query({ ...q, limit: 2, cursor: first.body.nextCursor }).set(auth).expect(200);
    expect(next.body.items.map((r: { state: string }) => r.state)).toEqual(['skipped', 'removed']);
    expect(next.body.nextCursor).toBeNull();
  });

  it('reads a local bound in a spring-forward gap as just before the jump: the runs after the gap are after it', async () => {
    const quarter = await h.http().post('/v1/schedules').set(auth).send({ key: 'quarter', kind: 'noop', cron: '*/15 * * * *', timezone: 'Europe/Berlin' }).expect(201);
    await h.db.dataSource.query(`UPDATE schedules SET created_at = '2026-03-01T00:00:00Z' WHERE id = $1`, [quarter.body.id]);
    const locals = async (query: Record<string, string>) =>
      (await h.http().get(`/v1/schedules/${quarter.body.id}/runs`).query(query).set(auth).expect(200)).body.items.map((r: { local: string }) => r.local.slice(11, 16));
    // 2026-03-29 02:30 never happened in Berlin. Read as 03:30 CEST, this left out 03:00 and 03:15.
    expect(await locals({ from: '2026-03-29T02:30', to: '2026-03-29T04:00' })).toEqual(['03:00', '03:15', '03:30', '03:45', '04:00']);
    expect(await locals({ from: '2026-03-29T01:30', to: '2026-03-29T02:30' })).toEqual(['01:45']);
    // 2026-10-25 02:00–03:00 happens twice (runs fire in the first pass): adjoining windows list each run once.
    expect(await locals({ from: '2026-10-25T02:00', to: '2026-10-25T02:30' })).toEqual(['02:15', '02:30']);
    expect(await locals({ from: '2026-10-25T02:30', to: '2026-10-25T03:15' })).toEqual(['02:45', '03:00', '03:15']);
  });

  it('takes from as exclusive and to as inclusive, so adjoining windows list a run once; a date holds its midnight', async () => {
    const runs = async (query: Record<string, string>, on = id) =>
      (await h.http().get(`/v1/schedules/${on}/runs`).query(query).set(auth).expect(200)).body.items.map((r: { at: string }) => r.at);
    const first = await runs({ from: '2026-11-09T01:00:00Z', to: '2026-11-10T01:00:00Z' });
    const second = await runs({ from: '2026-11-10T01:00:00Z', to: '2026-11-11T01:00:00Z' });
    expect([first, second]).toEqual([['2026-11-10T01:00:00.000Z'], ['2026-11-11T01:00:00.000Z']]);
    const midnight = await h.http().post('/v1/schedules').set(auth).send({ key: 'midnight', kind: 'noop', cron: '0 0 * * *', timezone: 'Europe/Berlin' }).expect(201);
    await h.db.dataSource.query(`UPDATE schedules SET created_at = '2026-11-01T00:00:00Z' WHERE id = $1`, [midnight.body.id]);
    expect(await runs({ date: '2026-11-10' }, midnight.body.id as string)).toEqual(['2026-11-09T23:00:00.000Z']);
  });

  it('after a zone change, a day before it lists the run that happened, not the new zone\'s instants', async () => {
    const created = await h.http().post('/v1/schedules').set(auth).send({ key: 'moved', kind: 'noop', cron: '0 2 * * *', timezone: 'Europe/Berlin' }).expect(201);
    const moved = created.body.id as string;
    await h.db.dataSource.query(`UPDATE schedules SET created_at = '2026-11-01T00:00:00Z' WHERE id = $1`, [moved]);
    // Its Berlin 02:00 run of 10 November (01:00 UTC) happened and succeeded.
    await h.db.dataSource.query(
      `INSERT INTO jobs (tenant_id, key, kind, run_at, state, attempts, finished_at) VALUES ($1, $2, 'noop', '2026-11-10T01:00:00Z', 'd', 1, '2026-11-10T01:00:05Z')`,
      [tenantId, `schedule:${moved}:2026-11-10T01:00:00Z`],
    );
    await h.http().patch(`/v1/schedules/${moved}`).set(auth).send({ timezone: 'Asia/Tokyo' }).expect(200);
    // 10 November in Tokyo is (9 Nov 15:00, 10 Nov 15:00] UTC; Tokyo's 02:00 (17:00 UTC the 9th) was never a run then.
    const res = await h.http().get(`/v1/schedules/${moved}/runs`).query({ date: '2026-11-10' }).set(auth).expect(200);
    expect(res.body.items.map((r: { at: string; state: string }) => [r.at, r.state])).toEqual([['2026-11-10T01:00:00.000Z', 'succeeded']]);
  });

  it("names a bad query's field, and answers another tenant's schedule 404", async () => {
    const bad = await h.http().get(`/v1/schedules/${id}/runs`).query({ date: '11/10/2026' }).set(auth).expect(400);
    expect(bad.body.details[0]).toMatchObject({ field: 'date', rule: 'format' });
    const order = await h.http().get(`/v1/schedules/${id}/runs`).query({ from: '2026-11-12T00:00Z', to: '2026-11-10T00:00Z' }).set(auth).expect(400);
    expect(order.body.details[0]).toMatchObject({ field: 'from', rule: 'order' });
    for (const [field, value] of [['from', '2026-13-01T00:00'], ['to', '2026-02-30T00:00'], ['from', '2026-11-10T24:00'], ['date', '2026-02-30'], ['date', '2026-00-10']]) {
      const res = await h.http().get(`/v1/schedules/${id}/runs`).query({ [field]: value }).set(auth);
      expect({ value, status: res.status, detail: res.body.details?.[0] }).toEqual({ value, status: 400, detail: expect.objectContaining({ field, rule: 'out_of_range' }) });
    }
    const other = await h.createTenant('other');
    await h.http().get(`/v1/schedules/${id}/runs`).set({ Authorization: `Bearer ${other.apiKey}` }).expect(404);
  });
});
