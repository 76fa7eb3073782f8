import { createServer } from 'node:net';
import { type ApiHarness, DAY, HOUR, inMs, MINUTE, startApi } from './api-harness';

async function deadPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Redis unreachable: ingest still commits and answers; the rows are left `scheduled` for the promoter. */
describe('ingest with Redis down', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };

  beforeAll(async () => {
    h = await startApi({ REDIS_URL: `redis://127.0.0.1:${await deadPort()}`, ALMANAC_ENQUEUE_TIMEOUT_MS: '200' });
    auth = { Authorization: `Bearer ${(await h.createTenant()).apiKey}` };
  });
  afterAll(() => h.close());

  it('stays ready, so Kubernetes keeps it in its Service: /health/ready checks Postgres only (API_READY_NEEDS)', async () => {
    const res = await h.http().get('/health/ready').expect(200);
    expect(res.body).toMatchObject({ status: 'ok', details: { postgres: { status: 'up' } } });
    expect(res.body.details.redis).toBeUndefined();
  });

  const state = async (id: string): Promise<string | undefined> => {
    const rows: { state: string }[] = await h.db.dataSource.query(`SELECT state FROM jobs WHERE id = $1`, [id]);
    return rows[0]?.state;
  };

  it('accepts immediate and hot jobs as committed scheduled rows and counts the failures', async () => {
    const one = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'down-1', runAt: inMs(MINUTE) }).expect(201);
    expect(one.body).toMatchObject({ tier: 'immediate', state: 'scheduled' });
    expect(await state(one.body.id)).toBe('s');
    const batch = await h.http().post('/v1/jobs/batch').set(auth).send({
      jobs: [
        { kind: 'noop', key: 'down-2', runAt: inMs(2 * HOUR) },
        { kind: 'noop', key: 'down-3', runAt: inMs(3 * DAY) },
      ],
    }).expect(200);
    expect(batch.body.results.map((r: { job: { state: string } }) => r.job.state)).toEqual(['scheduled', 'scheduled']);
    for (const r of batch.body.results) expect(await state(r.job.id)).toBe('s');
    // The replay is still idempotent with Redis down.
    await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'down-1', runAt: one.body.runAt }).expect(200);
    const metrics = await h.http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/almanac_ingest_enqueue_failures_total 2\b/);
    expect(metrics.text).toMatch(/almanac_jobs_ingested_total\{tier="immediate"\} 1\b/);
  });

  it('cancel and reschedule still work from the row', async () => {
    const j = await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'down-4', runAt: inMs(3 * DAY) }).expect(201);
    const moved = await h.http().patch(`/v1/jobs/${j.body.id}`).set(auth).send({ runAt: inMs(MINUTE) }).expect(200);
    expect(moved.body).toMatchObject({ tier: 'immediate', state: 'scheduled' });
    await h.http().delete(`/v1/jobs/${j.body.id}`).set(auth).expect(200);
    expect(await state(j.body.id)).toBe('c');
  });
});
