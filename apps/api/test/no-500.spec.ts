import { type ApiHarness, DAY, inMs, startApi } from './api-harness';

/** Odd values in every field of every write endpoint: always an answer below 500. */
describe('no 500 for client input', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let jobId: string;
  let scheduleId: string;

  const WEIRD: unknown[] = [
    null, true, 0, -1, 1e308, 2 ** 63, 'x', '', ' ', 'a'.repeat(5000), '\u0000', '\ud800', '😀', '2026-02-30T00:00:00Z',
    '+275760-09-13T00:00:00Z', '0000-01-01T00:00:00Z', [], [1, 2], {}, { a: { b: [] } }, '../../etc', "'; DROP TABLE jobs; --",
  ];

  beforeAll(async () => {
    h = await startApi();
    auth = { Authorization: `Bearer ${(await h.createTenant()).apiKey}` };
    jobId = (await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'base', runAt: inMs(2 * DAY) }).expect(201)).body.id;
    scheduleId = (await h.http().post('/v1/schedules').set(auth).send({ key: 'base', kind: 'noop', cron: '0 * * * *', timezone: 'UTC' }).expect(201)).body.id;
  });
  afterAll(() => h.close());

  it('job and schedule bodies', async () => {
    const seen = (label: string, status: number) => {
      if (status >= 500) console.log('500 from', label);
      return status;
    };
    const job = { kind: 'noop', key: 'fuzz', runAt: inMs(2 * DAY), payload: {}, maxAttempts: 3 };
    const schedule = { key: 'fuzz', kind: 'noop', cron: '0 9 * * *', timezone: 'Europe/Berlin', missed: 'skip', maxAttempts: 3 };
    const statuses = new Set<number>();
    for (const value of WEIRD) {
      for (const field of Object.keys(job)) {
        const body = { ...job, key: `fuzz-${statuses.size}-${field}`, [field]: value };
        statuses.add(seen(`job ${field}=${JSON.stringify(value)?.slice(0, 40)}`, (await h.http().post('/v1/jobs').set(auth).send(body)).status));
        statuses.add(seen(`batch ${field}=${JSON.stringify(value)?.slice(0, 40)}`, (await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [body, value] })).status));
        statuses.add(seen(`patch ${JSON.stringify(value)?.slice(0, 40)}`, (await h.http().patch(`/v1/jobs/${jobId}`).set(auth).send({ runAt: value })).status));
        statuses.add(seen(`retry ${field}`, (await h.http().post(`/v1/jobs/${jobId}/retry`).set(auth).send({ [field]: value })).status));
      }
      for (const field of Object.keys(schedule)) {
        statuses.add(seen(`schedule ${field}=${JSON.stringify(value)?.slice(0, 40)}`, (await h.http().post('/v1/schedules').set(auth).send({ ...schedule, [field]: value })).status));
        statuses.add(seen(`patch schedule ${field}=${JSON.stringify(value)?.slice(0, 40)}`, (await h.http().patch(`/v1/schedules/${scheduleId}`).set(auth).send({ [field]: value })).status));
      }
      statuses.add((await h.http().post('/v1/jobs/batch').set(auth).send({ jobs: value })).status);
      statuses.add((await h.http().post('/v1/admin/tenants').set('Authorization', 'Bearer test-admin-token-0123456789').send({ name: value })).status);
    }
    expect([...statuses].filter((s) => s >= 500)).toEqual([]);
  });

  it('paths and query strings', async () => {
    const statuses = new Set<number>();
    const texts = ['', 'x', '-1', '0', '1e3', '99999999999999999999', '%00', '%ZZ', 'a'.repeat(3000), "'", '[]'];
    for (const t of texts) {
      for (const path of [`/v1/jobs/${t}`, `/v1/schedules/${t}`, `/v1/schedules/${t}/next`, `/v1/jobs/${t}/retry`]) {
        statuses.add((await h.http().get(path).set(auth)).status);
        statuses.add((await h.http().delete(path).set(auth)).status);
      }
      for (const q of ['state', 'kind', 'from', 'to', 'limit', 'cursor', 'key']) {
        statuses.add((await h.http().get(`/v1/jobs?${q}=${t}`).set(auth)).status);
        statuses.add((await h.http().get(`/v1/jobs?${q}=${t}&${q}=${t}`).set(auth)).status);
      }
      statuses.add((await h.http().get(`/v1/schedules/${scheduleId}/next?count=${t}`).set(auth)).status);
      statuses.add((await h.http().get(`/v1/schedules?cursor=${t}&limit=${t}`).set(auth)).status);
    }
    expect([...statuses].filter((s) => s >= 500)).toEqual([]);
  });

  it('forged cursors with dates Postgres refuses are a 400', async () => {
    for (const runAt of ['2026-02-30T00:00:00.000000Z', '0000-01-01T00:00:00.000000Z']) {
      const cursor = Buffer.from(JSON.stringify([runAt, '1'])).toString('base64url');
      for (const state of [undefined, 'scheduled', 'succeeded']) {
        const res = await h.http().get('/v1/jobs').query({ cursor, ...(state ? { state } : {}) }).set(auth);
        expect({ runAt, state, status: res.status }).toEqual({ runAt, state, status: 400 });
      }
    }
  });

  it('forged cursors with ids outside a job id are a 400', async () => {
    for (const id of ['-9999999999999999999', '-1', '9223372036854775808']) {
      const cursor = Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000000Z', id])).toString('base64url');
      const res = await h.http().get('/v1/jobs').query({ cursor }).set(auth);
      expect({ id, status: res.status }).toEqual({ id, status: 400 });
    }
  });
});
