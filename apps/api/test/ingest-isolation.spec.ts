import { within } from '@almanac/platform';
import { someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { quietProxy, type QuietProxy } from '@almanac/testing/quiet-proxy';
import { TEST_REDIS_URL } from '@almanac/testing/test-redis';
import { type CommitEntry, IngestCommit } from '../src/jobs/ingest-commit';
import { type ApiHarness, inMs, MINUTE, startApi } from './api-harness';
import { entry, holdKey, insertsRun, rowsByTransaction, sharedInsertsSplit } from './ingest-rig';

/** What one tenant's traffic must not do to another's single POSTs, or a silent Redis to anyone's. */
describe("one tenant's backlog of single POSTs", () => {
  let h: ApiHarness;

  // One commit in flight, two rows a group: a backlog of six is three groups deep.
  beforeAll(async () => {
    h = await startApi({ ALMANAC_INGEST_COMMITS_IN_FLIGHT: '1', ALMANAC_INGEST_BATCH_MAX: '2' });
  });
  afterAll(() => h.close());

  it("holds another tenant's POST back by the insert running, not by the backlog: it goes next, with no more of the backlog than it brings", async () => {
    const [flooder, quiet] = [await h.createTenant('flooder'), await h.createTenant('quiet')];
    const ds = h.db.dataSource;
    // The flooder's rows are slow to insert (say 64 KiB payloads): 200 ms each.
    await ds.query(`CREATE FUNCTION slow_rows() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$`);
    await ds.query(`CREATE TRIGGER slow_rows BEFORE INSERT ON jobs FOR EACH ROW WHEN (NEW.tenant_id = ${flooder.id}) EXECUTE FUNCTION slow_rows()`);
    try {
      const commit = h.app.get(IngestCommit);
      const entry = (tenantId: number, key: string): CommitEntry => ({
        tenantId,
        tier: 'immediate',
        traceParent: null,
        input: { kind: 'noop', key, runAt: new Date(inMs(MINUTE)), payload: null, payloadBytes: 0, maxAttempts: 3, replay: 'conflict' },
      });
      const answered: string[] = [];
      const submit = (tenantId: number, key: string) => commit.one(entry(tenantId, key)).then((r) => (answered.push(key), r));
      // The flooder's six come first, in the same turn as the quiet tenant's one.
      const backlog = ['f1', 'f2', 'f3', 'f4', 'f5', 'f6'].map((key) => submit(flooder.id, key));
      const mine = await submit(quiet.id, 'q1');
      expect(mine).toMatchObject({ status: 'created', job: { state: 'queued' } });
      // In order of arrival it would wait for three groups of the flooder's (1.2 s); in a group of
      // the flooder's own, for one (0.4 s); it shared the first with one of the flooder's rows.
      expect(answered).toEqual(['f1', 'q1']);
      const theirs = await Promise.all(backlog);
      expect(theirs.map((r) => r.status)).toEqual(Array(6).fill('created'));
    } finally {
      await ds.query(`DROP TRIGGER slow_rows ON jobs; DROP FUNCTION slow_rows()`);
    }
  });
});

describe('single POSTs of many tenants', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_INGEST_COMMITS_IN_FLIGHT: '1', ALMANAC_INGEST_BATCH_MAX: '1000' });
  });
  afterAll(() => h.close());

  it('share one insert and its commit: one per tenant made every POST wait for the tenants ahead', async () => {
    const tenants = await Promise.all(['m1', 'm2', 'm3', 'm4', 'm5'].map((name) => h.createTenant(name)));
    const commit = h.app.get(IngestCommit);
    const answers = await Promise.all(tenants.map((t) => commit.one(entry(t.id, `shared-${t.id}`))));
    expect(answers.map((a) => a.status)).toEqual(Array(5).fill('created'));
    // Rows one transaction wrote share its xmin.
    const [{ n, rows }] = await h.db.dataSource.query(`SELECT count(DISTINCT xmin::text)::int AS n, count(*)::int AS rows FROM jobs WHERE key LIKE 'shared-%'`);
    expect({ n, rows }).toEqual({ n: 1, rows: 5 });
  });

  it("fail only the tenant whose value Postgres refuses; the others' in the same insert are created", async () => {
    const [bad, good] = [await h.createTenant('bad'), await h.createTenant('good')];
    const commit = h.app.get(IngestCommit);
    // A value past smallint (the API's own checks refuse it before this point).
    const answers = await Promise.all([commit.one(entry(bad.id, 'refused', 100_000)), commit.one(entry(good.id, 'fine'))]);
    expect(answers.map((a) => a.status)).toEqual(['failed', 'created']);
    expect(await h.db.dataSource.query(`SELECT tenant_id FROM jobs WHERE key IN ('refused', 'fine')`)).toEqual([{ tenant_id: good.id }]);
  });

  it("fail only the tenant whose row a trigger refuses; the others' in the same insert are created", async () => {
    const [bad, good, other] = [await h.createTenant('trigger-bad'), await h.createTenant('trigger-good'), await h.createTenant('trigger-other')];
    const ds = h.db.dataSource;
    await ds.query(`CREATE FUNCTION refuse_rows() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'not this one'; END $$`);
    await ds.query(`CREATE TRIGGER refuse_rows BEFORE INSERT ON jobs FOR EACH ROW WHEN (NEW.tenant_id = ${bad.id}) EXECUTE FUNCTION refuse_rows()`);
    try {
      const commit = h.app.get(IngestCommit);
      const split = await sharedInsertsSplit(h, 'refused');
      const answers = await Promise.all([commit.one(entry(bad.id, 'trig-1')), commit.one(entry(good.id, 'trig-2')), commit.one(entry(other.id, 'trig-3'))]);
      expect(answers.map((a) => a.status)).toEqual(['failed', 'created', 'created']);
      expect(await sharedInsertsSplit(h, 'refused')).toBe(split + 1);
    } finally {
      await ds.query(`DROP TRIGGER refuse_rows ON jobs; DROP FUNCTION refuse_rows()`);
    }
  });

  it('answer a retired key replayed in a shared insert as retired for its tenant, and create the others in that same insert', async () => {
    const [replayer, x, y] = [await h.createTenant('replayer'), await h.createTenant('rx'), await h.createTenant('ry')];
    await h.db.dataSource.query(`INSERT INTO retired_keys (tenant_id, key, removed_on, state) VALUES ($1, 'ret-gone', '2026-11-02', 'd')`, [replayer.id]);
    const commit = h.app.get(IngestCommit);
    const answers = await Promise.all([commit.one(entry(replayer.id, 'ret-gone')), commit.one(entry(x.id, 'ret-x')), commit.one(entry(y.id, 'ret-y'))]);
    expect(answers.map((a) => a.status)).toEqual(['retired', 'created', 'created']);
    expect(await rowsByTransaction(h, 'ret-%')).toEqual([{ [x.id]: 1, [y.id]: 1 }]);
  });

  it("withdraw a failed shared insert's POST whose deadline passes while it waits again: nothing is written after its 503", async () => {
    const [holderTenant, late] = [await h.createTenant('deadline-holder'), await h.createTenant('deadline-late')];
    const held = await holdKey(h, holderTenant.id, 'dl-held');
    const heldLate = await holdKey(h, late.id, 'dl-late'); // its own batch request, say, not committed yet
    try {
      const commit = h.app.get(IngestCommit);
      const before = await insertsRun(h);
      const mine = commit.one(entry(holderTenant.id, 'dl-held'));
      const deadline = new AbortController();
      const theirs = commit.one(entry(late.id, 'dl-late'), deadline.signal).catch((e: Error) => e.message);
      // The shared insert timed out on the held keys, and each tenant's own after it; the holder's
      // insert in the one slot for those waits on its key, the late tenant's POST waits behind it.
      for (const bound = Date.now() + 5000; (await insertsRun(h)) < before + 4; ) {
        if (Date.now() > bound) throw new Error('the holder never got an insert of its own');
        await new Promise((r) => setTimeout(r, 5));
      }
      await someoneWaitsOnALock(h.db.dataSource);
      deadline.abort(new Error('answered 503 at its deadline'));
      expect(await within(2000, theirs, 'the withdrawn POST')).toBe('answered 503 at its deadline');
      await heldLate.end();
      await held.end();
      expect((await mine).status).toBe('created');
      await commit.beforeApplicationShutdown(); // drains the batcher: nothing of the late tenant's left to run
      expect(await h.db.dataSource.query(`SELECT key FROM jobs WHERE key LIKE 'dl-%'`)).toEqual([{ key: 'dl-held' }]);
    } finally {
      await heldLate.end().catch(() => undefined);
      await held.end().catch(() => undefined);
    }
  });

  it('take at most SHARED_ROWS_PER_TENANT (50) of a backlog into a shared insert; a tenant alone fills one', async () => {
    const [p, q] = [await h.createTenant('cap-p'), await h.createTenant('cap-q')];
    const commit = h.app.get(IngestCommit);
    const posts = [
      ...Array.from({ length: 120 }, (_, i) => commit.one(entry(p.id, `cap-p-${i}`))),
      ...Array.from({ length: 60 }, (_, i) => commit.one(entry(q.id, `cap-q-${i}`))),
    ];
    expect(new Set((await Promise.all(posts)).map((a) => a.status))).toEqual(new Set(['created']));
    // p's 120 and q's 60: 50 each, then 10 each (q's rest, the largest other), then p's last 60 alone.
    const shares = await rowsByTransaction(h, 'cap-%');
    expect(shares).toHaveLength(3);
    expect(shares).toEqual(expect.arrayContaining([{ [p.id]: 50, [q.id]: 50 }, { [p.id]: 10, [q.id]: 10 }, { [p.id]: 60 }]));
  });

  it('never put a POST of more than 8 KiB of payload in a shared insert: it goes in its tenant\'s own', async () => {
    const [big, s1, s2] = [await h.createTenant('big'), await h.createTenant('small-1'), await h.createTenant('small-2')];
    const commit = h.app.get(IngestCommit);
    const answers = await Promise.all([
      commit.one(entry(big.id, 'pl-big', 3, 'x'.repeat(9 * 1024))),
      commit.one(entry(s1.id, 'pl-s1')),
      commit.one(entry(s2.id, 'pl-s2')),
    ]);
    expect(answers.map((a) => a.status)).toEqual(['created', 'created', 'created']);
    expect(await rowsByTransaction(h, 'pl-%')).toEqual(expect.arrayContaining([{ [big.id]: 1 }, { [s1.id]: 1, [s2.id]: 1 }]));
    expect(await rowsByTransaction(h, 'pl-%')).toHaveLength(2);
  });
});

describe('single POSTs while Redis is silent (connected, answering nothing)', () => {
  let h: ApiHarness;
  let proxy: QuietProxy;

  // Two commits in flight, two rows a group: were each commit to hold its slot for the 1 s
  // enqueue timeout, a replica would commit 4 jobs/s.
  beforeAll(async () => {
    proxy = await quietProxy(Number(new URL(TEST_REDIS_URL).port || 6379), new URL(TEST_REDIS_URL).hostname);
    h = await startApi({
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      ALMANAC_INGEST_COMMITS_IN_FLIGHT: '2',
      ALMANAC_INGEST_BATCH_MAX: '2',
      ALMANAC_ENQUEUE_TIMEOUT_MS: '1000',
      ALMANAC_REQUEST_TIMEOUT_MS: '2500',
    });
  });
  afterAll(async () => {
    await proxy.close(); // first: the API's commands to the silent Redis fail, and it closes
    await h.close();
  });

  it('answers each 201, its row left scheduled for the promoter, while Postgres is healthy', async () => {
    const auth = { Authorization: `Bearer ${(await h.createTenant()).apiKey}` };
    const post = (key: string) => h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key, runAt: inMs(MINUTE) });
    // Every connection the API uses is open (the hot queue's on the first enqueue) before Redis goes quiet.
    expect((await post('warm-up')).body).toMatchObject({ state: 'queued' });
    proxy.quiet();
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => post(`quiet-${i}`)));
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(201));
    expect(answers.map((a) => a.body.state)).toEqual(Array(16).fill('scheduled'));
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key LIKE 'quiet-%' AND state = 's'`);
    expect(n).toBe(16);
  });
});

describe('single POSTs waiting for their hint while Redis is silent', () => {
  let h: ApiHarness;
  let proxy: QuietProxy;

  beforeAll(async () => {
    proxy = await quietProxy(Number(new URL(TEST_REDIS_URL).port || 6379), new URL(TEST_REDIS_URL).hostname);
    h = await startApi({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, ALMANAC_INGEST_MAX_PENDING: '4', ALMANAC_ENQUEUE_TIMEOUT_MS: '1000', ALMANAC_REQUEST_TIMEOUT_MS: '2500' });
  });
  afterAll(async () => {
    await proxy.close();
    await h.close();
  });

  it('count toward the replica’s pending POSTs: past ALMANAC_INGEST_MAX_PENDING the next is shed, not held in memory', async () => {
    const tenants = await Promise.all(['a', 'b', 'c'].map(async (name) => ({ Authorization: `Bearer ${(await h.createTenant(name)).apiKey}` })));
    const post = (auth: { Authorization: string }, key: string) => h.http().post('/v1/jobs').set(auth).send({ kind: 'noop', key, runAt: inMs(MINUTE) });
    expect((await post(tenants[0], 'warm-up')).body).toMatchObject({ state: 'queued' });
    proxy.quiet();
    // Two tenants' two each: committed, then waiting for the enqueue Redis does not answer.
    const waiting = ['a-1', 'a-2', 'b-1', 'b-2'].map((key, i) => post(tenants[i < 2 ? 0 : 1], key).then((r) => r));
    for (const bound = Date.now() + 5000; ; ) {
      const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE key IN ('a-1', 'a-2', 'b-1', 'b-2')`);
      if (n === 4) break;
      if (Date.now() > bound) throw new Error('the four were never committed');
      await new Promise((r) => setImmediate(r));
    }
    const shed = await post(tenants[2], 'c-1');
    expect(shed.status).toBe(503); // before: held past its insert with the others, uncounted
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([201, 201, 201, 201]);
  });
});
