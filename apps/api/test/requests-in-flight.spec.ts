import { Client } from 'pg';
import { lockWaiters } from '../../../test/support/lock-waits';
import { type ApiHarness, DAY, inMs, startApi } from './api-harness';

type Auth = { Authorization: string };

/**
 * A tenant's slow requests within its request rate hold at most half of the pooled connections
 * ingest leaves a replica (RequestsInFlight): its requests past that wait for its own turns,
 * holding none, its console pages and a long poll's reads count with them, and another tenant's
 * reads still find a connection.
 */
describe("a tenant's requests in flight", () => {
  let h: ApiHarness;
  let locker: Client;
  let slow: Auth;
  let other: Auth;
  let cookie: string;
  let jobIds: string[];
  beforeAll(async () => {
    // (9 connections − 2 for the group commit, shared and own − 1 batch) / 2: three turns a tenant.
    h = await startApi({ ALMANAC_DB_POOL_SIZE: '9', ALMANAC_INGEST_COMMITS_IN_FLIGHT: '1', ALMANAC_INGEST_BATCHES_IN_FLIGHT: '1', ALMANAC_REQUEST_TIMEOUT_MS: '2000' });
    locker = new Client({ connectionString: h.db.url });
    await locker.connect();
    slow = { Authorization: `Bearer ${(await h.createTenant('slow')).apiKey}` };
    other = { Authorization: `Bearer ${(await h.createTenant('other')).apiKey}` };
    const signIn = await h.http().post('/console/sign-in').type('form').send({ token: slow.Authorization.slice(7) }).expect(303);
    cookie = String(signIn.headers['set-cookie']).split(';')[0];
    jobIds = [];
    for (let i = 0; i < 4; i++) jobIds.push((await h.http().post('/v1/jobs').set(slow).send({ kind: 'noop', key: `k${i}`, runAt: inMs(DAY) }).expect(201)).body.id);
  });
  afterAll(async () => {
    await locker.end();
    await h.close();
  });
  const list = (auth: Auth) => h.http().get('/v1/jobs').set(auth).then((r) => r);
  const page = () => h.http().get('/console/jobs').set('Cookie', cookie).then((r) => r);
  const waitingOnLocks = async () => {
    const [{ n }]: { n: number }[] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    return n;
  };
  async function whileJobsLocked<T>(work: () => Promise<T>): Promise<T> {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
    try {
      return await work();
    } finally {
      await locker.query('ROLLBACK');
    }
  }

  it("keeps a tenant's requests past its three turns off the pool of nine, and another tenant's read answers at once", async () => {
    const answers = await whileJobsLocked(async () => {
      const held = [list(slow), list(slow), list(slow)];
      await lockWaiters(h.db.dataSource, 3);
      const poll = h.http().get(`/v1/jobs/${jobIds[0]}`).query({ waitSeconds: 1 }).set(slow).then((r) => r);
      const waiting = [list(slow), list(slow), list(slow), list(slow), list(slow), page()];
      // Without the turns the ten requests held all nine connections, and this waited for one until its deadline.
      const started = Date.now();
      await h.http().get('/v1/schedules').set(other).expect(200);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(await waitingOnLocks()).toBe(3); // the others, the long poll's read among them, hold no connection
      return { held, waiting: [poll, ...waiting] };
    });
    expect((await Promise.all(answers.held)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await Promise.all(answers.waiting)).map((r) => r.status)).toEqual(Array(7).fill(200)); // their turns came
  });

  it('answers a request that waited half its deadline for a turn 429, naming the limit; its turns come back', async () => {
    const answers = await whileJobsLocked(async () => {
      const held = [list(slow), list(slow), list(slow)];
      await lockWaiters(h.db.dataSource, 3);
      return Promise.all([...held, list(slow), page()]);
    });
    expect(answers.map((r) => r.status)).toEqual([503, 503, 503, 429, 429]); // the three at their deadline, the two after 1 s
    expect(answers[3].headers['retry-after']).toBe('1');
    expect(answers[3].body.details).toEqual([expect.objectContaining({ field: 'tenant', rule: 'concurrent_requests' })]);
    // Nothing held on: three reads at once answer without waiting for a deadline.
    const started = Date.now();
    expect((await Promise.all([list(slow), list(slow), list(slow), page()])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('keeps the turn of a change answered at its deadline until it ends: it still holds its connection', async () => {
    await whileJobsLocked(async () => {
      const cancels = jobIds.slice(1).map((id) => h.http().delete(`/v1/jobs/${id}`).set(slow).then((r) => r));
      await lockWaiters(h.db.dataSource, 3);
      expect((await Promise.all(cancels)).map((r) => r.status)).toEqual([503, 503, 503]); // their deadline; each still waits on the lock (5 s)
      const read = list(slow);
      // Given back with the answers, their turns let this read take a fourth connection.
      expect((await read).status).toBe(429);
      expect(await waitingOnLocks()).toBe(3);
    });
  });
});
