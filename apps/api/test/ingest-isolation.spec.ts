import { quietProxy, type QuietProxy } from '@almanac/testing/quiet-proxy';
import { TEST_REDIS_URL } from '@almanac/testing/test-redis';
import { type CommitEntry, IngestCommit } from '../src/jobs/ingest-commit';
import { type ApiHarness, inMs, MINUTE, startApi } from './api-harness';

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

  const entry = (tenantId: number, key: string, maxAttempts = 3): CommitEntry => ({
    tenantId,
    tier: 'cold',
    traceParent: null,
    input: { kind: 'noop', key, runAt: new Date(inMs(48 * 60 * MINUTE)), payload: null, payloadBytes: 0, maxAttempts, replay: 'conflict' },
  });

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
