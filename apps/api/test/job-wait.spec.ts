import { createClient } from '@almanac/client';
import { JobWaits } from '../src/jobs/job-waits';
import { type ApiHarness, startApi } from './api-harness';

/** GET /v1/jobs/:id?waitSeconds=: a producer waits for a job to end without polling. */
describe('waiting for a job (/v1/jobs/:id?waitSeconds=)', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let apiKey: string;
  let tenantId: number;

  beforeAll(async () => {
    h = await startApi();
    ({ apiKey, id: tenantId } = await h.createTenant());
    auth = { Authorization: `Bearer ${apiKey}` };
  });
  afterAll(() => h.close());

  const create = async (key: string) =>
    (await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key, runAt: new Date(Date.now() + 86_400_000).toISOString() }).expect(201)).body.id as string;

  it('answers as soon as the job ends', async () => {
    const id = await create('wait-ends');
    const started = Date.now();
    const answer = h.http().get(`/v1/jobs/${id}`).query({ waitSeconds: 10 }).set(auth);
    // The job ends while the request is held (a worker's completion, as far as the row says).
    setTimeout(() => void h.db.dataSource.query(`UPDATE jobs SET state = 'd', finished_at = now(), result = '{"ok":true}' WHERE id = $1`, [id]), 300);
    const res = await answer.expect(200);
    expect(res.body).toMatchObject({ id, state: 'succeeded', result: { ok: true } });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('answers with the job as it is once the wait runs out, past the usual request deadline', async () => {
    const id = await create('wait-runs-out');
    const started = Date.now();
    const res = await h.http().get(`/v1/jobs/${id}`).query({ waitSeconds: 3 }).set(auth).expect(200); // the deadline is 2.5 s
    expect(res.body.state).toBe('queued');
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
  });

  it("bounds a tenant's waits at once, and names a bad waitSeconds", async () => {
    const id = await create('wait-many');
    const waits = Array.from({ length: 11 }, () => h.http().get(`/v1/jobs/${id}`).query({ waitSeconds: 2 }).set(auth).then((r) => r.status));
    const statuses = await Promise.all(waits);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    const bad = await h.http().get(`/v1/jobs/${id}`).query({ waitSeconds: 21 }).set(auth).expect(400);
    expect(bad.body.details[0]).toMatchObject({ field: 'waitSeconds' });
  });

  it('frees the slot of a wait whose client went away at once, not when its waitSeconds run out', async () => {
    const id = await create('wait-gone');
    const waits = h.app.get(JobWaits);
    const until = async (held: number) => {
      for (let i = 0; i < 500 && waits.held(tenantId) !== held; i++) await new Promise((r) => setTimeout(r, 10)); // requests in flight, not a timer
      expect(waits.held(tenantId)).toBe(held);
    };
    const clients = Array.from({ length: 10 }, () => new AbortController());
    const gone = clients.map((c) => fetch(`${h.url}/v1/jobs/${id}?waitSeconds=20`, { headers: auth, signal: c.signal }).catch(() => 'aborted'));
    await until(10);
    for (const c of clients) c.abort();
    expect(await Promise.all(gone)).toEqual(Array(10).fill('aborted'));
    await until(0);
    await h.http().get(`/v1/jobs/${id}`).query({ waitSeconds: 1 }).set(auth).expect(200);
  });

  it('the client waits too', async () => {
    const id = await create('wait-client');
    const client = createClient({ baseUrl: h.url, apiKey, timeoutMs: 1000 });
    setTimeout(() => void h.db.dataSource.query(`UPDATE jobs SET state = 'c', finished_at = now() WHERE id = $1`, [id]), 1500);
    expect((await client.jobs.waitFor(id, 5)).state).toBe('cancelled'); // past its own 1 s timeout
  });
});
