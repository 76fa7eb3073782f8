import { lockWaiters, noOneWaitsOnALock } from '@almanac/testing/lock-waits';
import { Client } from 'pg';
import { type ApiHarness, DAY, inMs, startApi } from './api-harness';
import { holdKey } from './ingest-rig';

/**
 * Batches under a stalled database: another session holds the jobs table locked, so every
 * insert waits. Past ALMANAC_INGEST_BATCHES_IN_FLIGHT a batch is shed at once (503 with
 * Retry-After), instead of joining the others in the pool's queue and taking the connections
 * group commits and reads need; one answered at its deadline stops waiting and writes nothing.
 */
describe('batches past the replica’s batches in flight', () => {
  let h: ApiHarness;
  let auth: { Authorization: string };
  let locker: Client;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_INGEST_BATCHES_IN_FLIGHT: '1', ALMANAC_REQUEST_TIMEOUT_MS: '1500', ALMANAC_PG_LOCK_TIMEOUT_MS: '10000' });
    auth = { Authorization: `Bearer ${(await h.createTenant()).apiKey}` };
    locker = new Client({ connectionString: h.db.url });
    await locker.connect();
  });
  afterAll(async () => {
    await locker.end();
    await h.close();
  });

  const batch = (key: string) => h.http().post('/v1/jobs/batch').set(auth).send({ jobs: [{ kind: 'noop', key, runAt: inMs(DAY) }] });

  it('are shed at once with 503 and Retry-After while one batch waits for the database', async () => {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
    try {
      const first = batch('first').then((r) => r); // supertest sends on then()
      for (let waiting = 0, tries = 0; waiting === 0; tries++) {
        if (tries > 200) throw new Error('the first batch never waited for the lock');
        [{ waiting }] = (await locker.query(`SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT granted AND relation = 'jobs'::regclass`)).rows;
      }
      const t0 = Date.now();
      const shed = await batch('shed');
      expect(Date.now() - t0).toBeLessThan(1000); // at once, not at the deadline (1.5 s)
      expect(shed.status).toBe(503);
      expect(shed.headers['retry-after']).toBe('1');
      expect(shed.body.details[0]).toMatchObject({ field: 'jobs', rule: 'concurrent_batches' });
      expect((await first).status).toBe(503); // its deadline
      // Answered, it stops waiting for the lock: nothing of it is left to write once the lock goes.
      await noOneWaitsOnALock(h.db.dataSource);
    } finally {
      await locker.query('ROLLBACK');
    }
    // Its slot comes back once the first batch is done with the database.
    let again = await batch('shed');
    for (let tries = 0; again.status === 503 && tries < 50; tries++) again = await batch('shed');
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(1);
    expect((await locker.query(`SELECT count(*)::int AS n FROM jobs WHERE key = 'first'`)).rows[0].n).toBe(0);
  });
});

/**
 * One tenant's batches stuck on its own keys (held uncommitted by another transaction of its own:
 * a batch or replay in flight) hold all but one of the replica's batches in flight: one tenant's
 * batches shed another's (503 concurrent_batches) while each counted against the whole replica.
 */
describe("one tenant's batches in flight", () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_INGEST_BATCHES_IN_FLIGHT: '4', ALMANAC_REQUEST_TIMEOUT_MS: '30000', ALMANAC_PG_LOCK_TIMEOUT_MS: '30000' });
  });
  afterAll(() => h.close());

  it("hold all but one of the replica's: past its share its batch is shed, another tenant's is committed", async () => {
    const [a, b] = [await h.createTenant('a'), await h.createTenant('b')];
    const batch = (apiKey: string, key: string) =>
      h.http().post('/v1/jobs/batch').set({ Authorization: `Bearer ${apiKey}` }).send({ jobs: [{ kind: 'noop', key, runAt: inMs(DAY) }] });
    const keys = ['held-1', 'held-2', 'held-3'];
    const holds = await Promise.all(keys.map((key) => holdKey(h, a.id, key)));
    try {
      const stuck = keys.map((key) => batch(a.apiKey, key).then((r) => r)); // supertest sends on then()
      await lockWaiters(h.db.dataSource, 3); // A's three batches hold their slots, waiting on its own keys
      const shed = await batch(a.apiKey, 'a-third');
      expect(shed.status).toBe(503);
      expect(shed.headers['retry-after']).toBe('1');
      expect(shed.body.details[0]).toMatchObject({ field: 'jobs', rule: 'tenant_concurrent_batches' });
      expect(shed.body.message).toContain("at most 3 of one tenant's");
      const other = await batch(b.apiKey, 'b-first');
      expect(other.status).toBe(200);
      expect(other.body.created).toBe(1);
      await Promise.all(holds.splice(0).map((x) => x.end()));
      expect((await Promise.all(stuck)).map((r) => [r.status, r.body.created])).toEqual([[200, 1], [200, 1], [200, 1]]);
    } finally {
      await Promise.all(holds.map((x) => x.end()));
    }
    // Its slots come back with its answers.
    const again = await batch(a.apiKey, 'a-third');
    expect([again.status, again.body.created]).toEqual([200, 1]);
  });
});

