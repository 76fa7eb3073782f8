import { Client } from 'pg';
import { lockWaiters } from '../../../test/support/lock-waits';
import { type ApiHarness, startApi } from './api-harness';

type Auth = { Authorization: string };

/**
 * A tenant's slow reads within its request rate hold at most half of a replica's pooled
 * connections (RequestsInFlight): its reads past that wait for its own slots, holding none, its
 * console pages count with them, and another tenant's reads still find a connection.
 */
describe("a tenant's requests in flight", () => {
  let h: ApiHarness;
  let locker: Client;
  let slow: Auth;
  let other: Auth;
  let cookie: string;
  beforeAll(async () => {
    h = await startApi({ ALMANAC_DB_POOL_SIZE: '6', ALMANAC_REQUEST_TIMEOUT_MS: '2000' });
    locker = new Client({ connectionString: h.db.url });
    await locker.connect();
    slow = { Authorization: `Bearer ${(await h.createTenant('slow')).apiKey}` };
    other = { Authorization: `Bearer ${(await h.createTenant('other')).apiKey}` };
    const signIn = await h.http().post('/console/sign-in').type('form').send({ token: slow.Authorization.slice(7) }).expect(303);
    cookie = String(signIn.headers['set-cookie']).split(';')[0];
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

  it("keeps a tenant's reads past three of a pool of six waiting off the pool, and another tenant's read answers at once", async () => {
    const answers = await whileJobsLocked(async () => {
      const held = [list(slow), list(slow), list(slow)];
      await lockWaiters(h.db.dataSource, 3);
      const waiting = [list(slow), list(slow), list(slow), page()];
      // Without the cap the six reads held all six connections, and this waited for one until its deadline.
      const started = Date.now();
      await h.http().get('/v1/schedules').set(other).expect(200);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(await waitingOnLocks()).toBe(3); // the four past the share hold no connection
      return { held, waiting };
    });
    expect((await Promise.all(answers.held)).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await Promise.all(answers.waiting)).map((r) => r.status)).toEqual([200, 200, 200, 200]); // their turn came
  });

  it('answers a read still waiting for its turn at its deadline (503), and its slots come back', async () => {
    const answers = await whileJobsLocked(async () => {
      const all = [list(slow), list(slow), list(slow)];
      await lockWaiters(h.db.dataSource, 3);
      all.push(list(slow), page());
      return Promise.all(all); // every one answered at its deadline, the lock still held
    });
    expect(answers.map((r) => r.status)).toEqual([503, 503, 503, 503, 503]);
    // Nothing held on: three reads at once answer without waiting for a deadline.
    const started = Date.now();
    expect((await Promise.all([list(slow), list(slow), list(slow), page()])).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
