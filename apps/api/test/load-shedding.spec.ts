import { request as httpRequest } from 'node:http';
import { Client } from 'pg';
import { ADMIN_TOKEN, type ApiHarness, clockHeld, DAY, inMs, startApi } from './api-harness';

/**
 * The API with `env`, a tenant, and another session of its database that can stall it for real:
 * `whileLocked` holds ACCESS EXCLUSIVE locks on tables, so every query on them waits.
 */
function stallableApi(env: Record<string, string>) {
  const t = {} as { h: ApiHarness; auth: { Authorization: string }; locker: Client };
  beforeAll(async () => {
    // Two turns a tenant (RequestsInFlight): a read sent right after one answered at its deadline
    // does not wait for that one's connection to close (slow on a loaded host: a 429, not a 503).
    t.h = await startApi({ ALMANAC_DB_POOL_SIZE: '12', ...env });
    t.auth = { Authorization: `Bearer ${(await t.h.createTenant()).apiKey}` };
    t.locker = new Client({ connectionString: t.h.db.url });
    await t.locker.connect();
  });
  afterAll(async () => {
    await t.locker.end();
    await t.h.close();
  });
  return t;
}

/** Runs `work` while `tables` are locked by the other session; the locks go when it ends. */
async function whileLocked<T>(locker: Client, tables: string, work: () => Promise<T>): Promise<T> {
  await locker.query('BEGIN');
  await locker.query(`LOCK TABLE ${tables} IN ACCESS EXCLUSIVE MODE`);
  try {
    return await work();
  } finally {
    await locker.query('ROLLBACK');
  }
}

/**
 * A stalled database: every insert waits. The API must answer within its deadline (503 with
 * Retry-After), shed new single-job POSTs once its commit queue is full, and lose nothing it
 * answered 201 for.
 */
describe('load shedding with a stalled database', () => {
  const t = stallableApi({
    ALMANAC_REQUEST_TIMEOUT_MS: '400',
    ALMANAC_INGEST_MAX_PENDING: '3',
    ALMANAC_INGEST_COMMITS_IN_FLIGHT: '1',
    ALMANAC_PG_LOCK_TIMEOUT_MS: '3000',
  });

  it('answers 503 with Retry-After within the deadline, sheds past the commit queue, and a resend with the same key makes one job', async () => {
    const { h, auth, locker } = t;
    const bodies = Array.from({ length: 8 }, (_, i) => ({ kind: 'noop', key: `stall-${i}`, runAt: inMs(DAY) }));
    const started = Date.now();
    const answers = await whileLocked(locker, 'jobs', () => Promise.all(bodies.map((b) => h.http().post('/v1/jobs').set(auth).send(b))));
    expect(Date.now() - started).toBeLessThan(2000); // the deadline (400 ms), not the lock timeout (3 s)
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(503));
    for (const a of answers) {
      expect(a.headers['retry-after']).toBe('1');
      expect(a.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable' });
    }
    // Past the commit queue's bound the API sheds at once instead of queueing.
    expect(answers.filter((a) => /too many (of this tenant's )?jobs are waiting/.test(a.body.message)).length).toBeGreaterThan(0);
    // The one whose commit was under way commits once the lock goes. A client that resends after
    // Retry-After (here at once, a few times) gets 201 or 200, never a second job.
    for (let i = 0; i < 8; i++) {
      let again = await h.http().post('/v1/jobs').set(auth).send(bodies[i]);
      for (let tries = 0; again.status === 503 && tries < 20; tries++) again = await h.http().post('/v1/jobs').set(auth).send(bodies[i]);
      expect([200, 201]).toContain(again.status);
      const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key = $1`, [bodies[i].key]);
      expect(n).toBe(1);
    }
  });
});

describe('one tenant flooding the commit queue', () => {
  const t = stallableApi({ ALMANAC_REQUEST_TIMEOUT_MS: '400', ALMANAC_INGEST_MAX_PENDING: '6', ALMANAC_INGEST_COMMITS_IN_FLIGHT: '1', ALMANAC_PG_LOCK_TIMEOUT_MS: '3000' });

  it("holds at most half of it: another tenant's jobs still queue for their commit, not shed", async () => {
    const { h, auth, locker } = t;
    const other = { Authorization: `Bearer ${(await h.createTenant()).apiKey}` };
    const post = (a: typeof auth, key: string) => h.http().post('/v1/jobs').set(a).send({ kind: 'noop', key, runAt: inMs(DAY) });
    const [flood, quiet] = await whileLocked(locker, 'jobs', async () => {
      const flood = Promise.all(Array.from({ length: 8 }, (_, i) => post(auth, `flood-${i}`).then((r) => r)));
      await new Promise((r) => setTimeout(r, 100)); // the flood's POSTs are in first
      return [await flood, await post(other, 'quiet-1')];
    });
    expect(flood.filter((a) => /too many of this tenant's jobs/.test(a.body.message)).length).toBe(5); // 3 of 6 held, the rest shed at once
    expect(quiet.status).toBe(503);
    expect(quiet.body.message).not.toMatch(/too many/); // it waited for its commit until its deadline: the queue had room
  });
});

describe('a POST answered 503 at its deadline', () => {
  const t = stallableApi({ ALMANAC_REQUEST_TIMEOUT_MS: '400', ALMANAC_INGEST_COMMITS_IN_FLIGHT: '1', ALMANAC_PG_LOCK_TIMEOUT_MS: '10000' });

  it('leaves no write behind when its job was still waiting for a group commit', async () => {
    const { h, auth, locker } = t;
    const post = (key: string) => h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key, runAt: inMs(DAY) });
    const [first, queued] = await whileLocked(locker, 'jobs', async () => {
      const first = post('under-way').then((r) => r); // supertest sends on then()
      // Its group commit holds the one commit slot, waiting for the lock, before the others come.
      for (let waiting = 0, tries = 0; waiting === 0; tries++) {
        if (tries > 200) throw new Error('the first insert never waited for the lock');
        [{ waiting }] = (await locker.query(`SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT granted AND relation = 'jobs'::regclass`)).rows;
      }
      const queued = await Promise.all(Array.from({ length: 6 }, (_, i) => post(`queued-${i}`)));
      return [await first, queued];
    });
    expect([first.status, ...queued.map((a) => a.status)]).toEqual(Array(7).fill(503));
    // Group commits go in order: once a later POST is in, anything queued before it would be too.
    await post('after').expect(201);
    const rows: { key: string }[] = await h.db.dataSource.query(`SELECT key FROM jobs WHERE key <> 'after' ORDER BY key`);
    expect(rows.map((r) => r.key)).toEqual(['under-way']);
  });
});

describe('a read answered 503 at its deadline', () => {
  const t = stallableApi({ ALMANAC_REQUEST_TIMEOUT_MS: '400', ALMANAC_PG_LOCK_TIMEOUT_MS: '20000' });

  it('stops its statement: nothing of it waits on the lock, or holds a connection, past the answer', async () => {
    const { h, auth, locker } = t;
    /** Statements waiting for the lock, once none is (a discarded connection's backend leaves within a second), or after ~2.5 s. */
    const waitingAfterAnswer = async () => {
      let n = -1;
      for (let tries = 0; n !== 0 && tries < 50; tries++) {
        if (tries > 0) await locker.query('SELECT pg_sleep(0.05)');
        [{ n }] = (await locker.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'jobs'::regclass`)).rows;
      }
      return n;
    };
    const reads = ['/v1/jobs', '/v1/jobs?state=dead', '/v1/jobs?key=k-1', '/v1/jobs/1', '/v1/jobs/1/attempts'];
    await whileLocked(locker, 'jobs', async () => {
      for (const path of reads) {
        const res = await h.http().get(path).set(auth);
        expect([path, res.status]).toEqual([path, 503]);
        expect([path, await waitingAfterAnswer()]).toEqual([path, 0]); // without the stop: each waited out the lock (20 s)
      }
    });
    await h.http().get('/v1/jobs').set(auth).expect(200); // the pool replaced what it discarded
  });
});

/** Backends of the API waiting for a lock, once none is (a discarded connection's leaves within a second), or after ~2.5 s. */
async function lockWaitersAfterAnswer(locker: Client): Promise<number> {
  let n = -1;
  for (let tries = 0; n !== 0 && tries < 50; tries++) {
    if (tries > 0) await locker.query('SELECT pg_sleep(0.05)');
    [{ n }] = (await locker.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
    )).rows;
  }
  return n;
}

/**
 * The console's pages and the other reads that take the request's signal: a tenant reloading a
 * heavy page at its deadline must not leave its statements running on a pooled connection.
 */
describe('a console page or other read answered 503 at its deadline', () => {
  const t = stallableApi({ ALMANAC_REQUEST_TIMEOUT_MS: '400', ALMANAC_PG_LOCK_TIMEOUT_MS: '20000' });

  it('stops its statements: no backend of it is left waiting on the lock after the answer', async () => {
    const { h, auth, locker } = t;
    const signIn = async (token: string) => String((await h.http().post('/console/sign-in').type('form').send({ token }).expect(303)).headers['set-cookie']).split(';')[0];
    const tenantCookie = await signIn(auth.Authorization.slice('Bearer '.length));
    const adminCookie = await signIn(ADMIN_TOKEN);
    const job = (await h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key: 'console-1', runAt: inMs(DAY) }).expect(201)).body as { id: string };
    const schedule = (await h.http().post('/v1/schedules').set(auth).send({ key: 'every-minute', kind: 'noop', cron: '* * * * *', timezone: 'UTC', payload: {} }).expect(201)).body as { id: string };
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const reads: [string, string | Record<string, string>][] = [
      ['/console', tenantCookie], // the overview's five reads
      ['/console/jobs', tenantCookie],
      ['/console/jobs?key=console-1', tenantCookie],
      [`/console/jobs/${job.id}`, tenantCookie],
      [`/console/jobs/${job.id}?attempts=2030-01-01T00:00:00.000Z`, tenantCookie],
      ['/console/schedules', tenantCookie],
      [`/console/schedules/${schedule.id}`, tenantCookie],
      ['/console/tenants', adminCookie],
      ['/v1/schedules', auth],
      [`/v1/schedules/${schedule.id}`, auth],
      [`/v1/schedules/${schedule.id}/next`, auth],
      [`/v1/schedules/${schedule.id}/runs`, auth],
      ['/v1/operations/1', auth],
      ['/v1/admin/tenants', admin],
    ];
    await whileLocked(locker, 'jobs, schedules, bulk_operations', async () => {
      for (const [path, who] of reads) {
        const res = await h.http().get(path).set(typeof who === 'string' ? { Cookie: who } : who);
        expect([path, res.status]).toEqual([path, 503]);
        expect([path, await lockWaitersAfterAnswer(locker)]).toEqual([path, 0]); // without the stop: each waited out the lock (20 s)
      }
    });
    // Alone: a tenant's key lookup reads tenant_keys too.
    const keysPath = `/v1/admin/tenants/${(await h.createTenant('keyed')).id}/keys`;
    await whileLocked(locker, 'tenant_keys', async () => {
      expect((await h.http().get(keysPath).set(admin)).status).toBe(503);
      expect(await lockWaitersAfterAnswer(locker)).toBe(0);
    });
    await h.http().get('/console').set('Cookie', tenantCookie).expect(200); // the pool replaced what it discarded
  });
});

describe('a database timeout inside the deadline', () => {
  const t = stallableApi({ ALMANAC_REQUEST_TIMEOUT_MS: '5000', ALMANAC_PG_LOCK_TIMEOUT_MS: '200' });

  it('is a 503 with Retry-After, not a 500', async () => {
    const res = await whileLocked(t.locker, 'jobs', () => t.h.http().post('/v1/jobs').set(t.auth).send({ kind: 'noop', key: 'locked', runAt: inMs(DAY) }));
    expect(res.status).toBe(503); // lock_timeout (55P03) after 200 ms
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.message).toMatch(/not answering in time/);
  });
});

describe('request rate limit per tenant', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_REQUEST_RATE_LIMIT_PER_SECOND: '5' });
  });
  afterAll(() => h.close());

  it('answers 429 with Retry-After naming the limit past the burst, for that tenant only', async () => {
    const busy = { Authorization: `Bearer ${(await h.createTenant('busy')).apiKey}` };
    const calm = { Authorization: `Bearer ${(await h.createTenant('calm')).apiKey}` };
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await h.http().get('/v1/jobs?limit=1').set(busy)).status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(5);
    expect(statuses).toContain(429);
    const refused = await h.http().get('/v1/jobs?limit=1').set(busy).expect(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body.details[0]).toMatchObject({ field: 'tenant', rule: 'request_rate_limit' });
    expect(refused.body.message).toMatch(/5 requests\/s/);
    await h.http().get('/v1/jobs?limit=1').set(calm).expect(200);
    // Ingest spends its own (job) budget, not this one.
    await h.http().post('/v1/jobs').set(busy).send({ kind: 'noop', key: 'w-1', runAt: inMs(DAY) }).expect(201);
  });

  it('counts every method, and requests the route would refuse as invalid, before any is validated', async () => {
    const busy = { Authorization: `Bearer ${(await h.createTenant('mutator')).apiKey}` };
    const calm = { Authorization: `Bearer ${(await h.createTenant('bystander')).apiKey}` };
    // Feb 31: checking it cost the API's event loop milliseconds while no budget counted it.
    const never = { key: 'never', kind: 'noop', cron: '0 0 31 2 *', timezone: 'UTC' };
    await clockHeld(h, async () => {
      // The budget of 5, spent by mutations that change nothing: none is free.
      await h.http().delete('/v1/jobs/1').set(busy).expect(404);
      await h.http().patch('/v1/jobs/1').set(busy).send({ runAt: 'soon' }).expect(400);
      await h.http().post('/v1/jobs/1/retry').set(busy).send({}).expect(404);
      const invalid = await h.http().post('/v1/schedules').set(busy).send(never).expect(400);
      expect(invalid.body.details[0]).toMatchObject({ field: 'cron', rule: 'never' });
      await h.http().post('/v1/schedules/1/pause').set(busy).expect(404);
      const refusals = [
        h.http().post('/v1/schedules').set(busy).send(never),
        h.http().patch('/v1/schedules/1').set(busy).send({ cron: '0 0 31 2 *' }),
        h.http().delete('/v1/schedules/1').set(busy),
        h.http().post('/v1/schedules/1/resume').set(busy),
        h.http().delete('/v1/jobs/1').set(busy),
        h.http().patch('/v1/jobs/1').set(busy).send({ runAt: inMs(DAY) }),
        h.http().post('/v1/jobs/1/retry').set(busy).send({}),
        h.http().post('/v1/jobs/bulk-cancel').set(busy).send({}),
        h.http().post('/v1/jobs/bulk-reschedule').set(busy).send({}),
        h.http().get('/v1/jobs?limit=1').set(busy),
      ];
      for (const pending of refusals) {
        const res = await pending;
        expect(res.status).toBe(429);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.body.details[0]).toMatchObject({ field: 'tenant', rule: 'request_rate_limit' });
      }
      await h.http().post('/v1/schedules').set(calm).send(never).expect(400); // another tenant's budget is its own
      await h.http().post('/v1/jobs').set(busy).send({ kind: 'noop', key: 'still-ingests', runAt: inMs(DAY) }).expect(201);
    });
  });

  it('lets ingest spend its job budget once, before validation: invalid jobs count there, and not against the request budget', async () => {
    const t = { Authorization: `Bearer ${(await h.createTenant('sloppy', 1)).apiKey}` }; // 1 job/s: a burst of 1,000
    const bad = { kind: 'noop', key: 'bad', runAt: 'not a date' };
    await clockHeld(h, async () => {
      for (let i = 0; i < 6; i++) await h.http().post('/v1/jobs').set(t).send(bad).expect(400); // 6 jobs of the 1,000
      await h.http().get('/v1/jobs?limit=1').set(t).expect(200); // more than the 5 requests: ingest did not spend them
      const batch = await h.http().post('/v1/jobs/batch').set(t).send({ jobs: Array.from({ length: 994 }, () => bad) }).expect(200);
      expect(batch.body.errors).toBe(994); // 994 more, all invalid: the burst is spent
      const refused = await h.http().post('/v1/jobs').set(t).send({ kind: 'noop', key: 'valid', runAt: inMs(DAY) }).expect(429);
      expect(refused.body.details[0]).toMatchObject({ field: 'tenant', rule: 'rate_limit' });
      expect(refused.headers['retry-after']).toBe('1');
      await h.http().post('/v1/jobs').set(t).send(bad).expect(429); // refused before it is read
    });
  });

  it('counts HEAD as the GET it runs', async () => {
    const prober = { Authorization: `Bearer ${(await h.createTenant('prober')).apiKey}` };
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await h.http().head('/v1/jobs?limit=100').set(prober)).status);
    expect(statuses).toContain(429);
  });
});

describe('the request deadline counts the time spent authenticating', () => {
  // Keys are looked up again on every request (TTL 1 ms): the lookup itself meets the stall.
  const t = stallableApi({ ALMANAC_REQUEST_TIMEOUT_MS: '1000', ALMANAC_AUTH_CACHE_TTL_MS: '1', ALMANAC_PG_LOCK_TIMEOUT_MS: '10000' });

  it('a stalled key lookup and a stalled insert together still answer 503 within the deadline, for a tenant known before the stall', async () => {
    await t.h.http().get('/v1/jobs?limit=1').set(t.auth).expect(200); // known
    const t0 = Date.now();
    const res = await whileLocked(t.locker, 'tenants, jobs', () =>
      t.h.http().post('/v1/jobs').set(t.auth).send({ kind: 'noop', key: 'stalled-both', runAt: inMs(DAY) }),
    );
    expect(res.status).toBe(503);
    // Half the deadline waiting for the lookup, the rest for the insert: not the two in a row.
    expect(Date.now() - t0).toBeLessThan(1400);
  });
});

describe('a slow upload', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_REQUEST_TIMEOUT_MS: '500' });
  });
  afterAll(() => h.close());

  it('is not answered 503 for the time its body took to arrive: the deadline starts once the body is in', async () => {
    const key = (await h.createTenant()).apiKey;
    const body = JSON.stringify({ jobs: [{ kind: 'noop', key: 'slow-upload', runAt: inMs(DAY) }] });
    const { hostname, port } = new URL(h.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({
        hostname, port, path: '/v1/jobs/batch', method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.write(body.slice(0, 10));
      // A client on a slow link: the rest of the body arrives after twice the deadline.
      setTimeout(() => req.end(body.slice(10)), 1000);
    });
    expect(status).toBe(200);
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key = 'slow-upload'`);
    expect(n).toBe(1);
  });
});
