import { within } from '@almanac/platform';
import { lockWaiters, someoneWaitsOnALock } from '@almanac/testing/lock-waits';
import { IngestCommit } from '../src/jobs/ingest-commit';
import { type ApiHarness, startApi } from './api-harness';
import { entry, holdKey, sharedInsertsSplit, withKeysHeld } from './ingest-rig';

/** A tenant's key held uncommitted, or the whole table locked: what that does to other tenants' single POSTs. */
describe("single POSTs of many tenants beside one tenant's key held uncommitted", () => {
  let h: ApiHarness;

  // The default two commit slots.
  beforeAll(async () => {
    h = await startApi({ ALMANAC_INGEST_COMMITS_IN_FLIGHT: '2' });
  });
  afterAll(() => h.close());

  it("wait for it no longer than the shared insert's lock timeout; that tenant's POST answers once the key's transaction ends", async () => {
    const [a, b, c] = [await h.createTenant('held-a'), await h.createTenant('held-b'), await h.createTenant('held-c')];
    const held = await holdKey(h, a.id, 'held-k');
    const split = await sharedInsertsSplit(h, 'held_key');
    try {
      const commit = h.app.get(IngestCommit);
      const answered: string[] = [];
      const post = (tenantId: number, key: string) => commit.one(entry(tenantId, key)).then((r) => (answered.push(key), r));
      const mine = post(a.id, 'held-k');
      const others = Promise.all([post(b.id, 'held-b1'), post(c.id, 'held-c1')]);
      // Sharing an insert that waits on the held key, they would wait as long as it stays held.
      expect((await within(2000, others, "the other tenants' POSTs")).map((r) => r.status)).toEqual(['created', 'created']);
      await someoneWaitsOnALock(h.db.dataSource); // a's own insert, on its own key
      expect(answered.sort()).toEqual(['held-b1', 'held-c1']);
      expect(await sharedInsertsSplit(h, 'held_key')).toBeGreaterThan(split);
      await held.end();
      expect((await mine).status).toBe('created');
    } finally {
      await held.end().catch(() => undefined);
    }
  });

  it("leave a slot to the others while two tenants' own inserts wait on their held keys", async () => {
    const [a, b, c] = [await h.createTenant('pair-a'), await h.createTenant('pair-b'), await h.createTenant('pair-c')];
    await withKeysHeld(h, [[a.id, 'pair-ka'], [b.id, 'pair-kb']], async (release) => {
      const commit = h.app.get(IngestCommit);
      const theirs = [commit.one(entry(a.id, 'pair-ka')), commit.one(entry(b.id, 'pair-kb'))];
      await lockWaiters(h.db.dataSource, 2); // each one's own insert, on its own key (their shared one waited on one)
      // Without slots of their own, their inserts took both commit slots, and c waited out the 5 s lock timeout.
      expect((await within(2000, commit.one(entry(c.id, 'pair-c1')), "c's POST")).status).toBe('created');
      await release();
      expect((await Promise.all(theirs)).map((r) => r.status)).toEqual(['created', 'created']);
    });
  });

  it("answer tenants that only shared an insert with two held keys at once, not after the held ones", async () => {
    const [a, b, c, d] = [await h.createTenant('mix-a'), await h.createTenant('mix-b'), await h.createTenant('mix-c'), await h.createTenant('mix-d')];
    await withKeysHeld(h, [[a.id, 'mix-ka'], [b.id, 'mix-kb']], async (release) => {
      const commit = h.app.get(IngestCommit);
      const theirs = [commit.one(entry(a.id, 'mix-ka')), commit.one(entry(b.id, 'mix-kb'))];
      const others = Promise.all([commit.one(entry(c.id, 'mix-c1')), commit.one(entry(d.id, 'mix-d1'))]); // the same insert as a's and b's
      // Each tenant goes again as its own insert in the shared slots first; before, all four went
      // to the slots for held ones, and c and d waited behind a and b for the 5 s lock timeout.
      expect((await within(2000, others, "c's and d's POSTs")).map((r) => r.status)).toEqual(['created', 'created']);
      await release();
      expect((await Promise.all(theirs)).map((r) => r.status)).toEqual(['created', 'created']);
    });
  });

  it("leave the shared slots to the others while two tenants, each the only one waiting, post their held keys", async () => {
    const [a, b, c] = [await h.createTenant('solo-a'), await h.createTenant('solo-b'), await h.createTenant('solo-c')];
    await withKeysHeld(h, [[a.id, 'solo-ka'], [b.id, 'solo-kb']], async (release) => {
      const commit = h.app.get(IngestCommit);
      const first = commit.one(entry(a.id, 'solo-ka')); // alone in the queue: an insert of a's POSTs only
      await someoneWaitsOnALock(h.db.dataSource);
      const second = commit.one(entry(b.id, 'solo-kb'));
      await lockWaiters(h.db.dataSource, 2);
      // Each insert in a shared slot waits 150 ms on a held key, then goes to a slot of its own;
      // before, a tenant's own group waited there for the lock timeout (5 s), and two held both.
      expect((await within(2000, commit.one(entry(c.id, 'solo-c1')), "c's POST")).status).toBe('created');
      await release();
      expect((await Promise.all([first, second])).map((r) => r.status)).toEqual(['created', 'created']);
    });
  });

  it("hold a tenant's POSTs sent back alone while its insert waits on its held key: its retries never take both slots from the others", async () => {
    const [a, b] = [await h.createTenant('wedge-a'), await h.createTenant('wedge-b')];
    const held = await holdKey(h, a.id, 'wedge-k');
    try {
      const commit = h.app.get(IngestCommit);
      const sent = entry(a.id, 'wedge-k');
      const first = commit.one(sent);
      await someoneWaitsOnALock(h.db.dataSource); // a's own insert waits on its key, in one slot
      const retry = commit.one(sent); // its client sends it again, alone in the queue: no second insert of a's own
      await new Promise((r) => setImmediate(r)); // the batcher's turn
      const other = commit.one(entry(b.id, 'wedge-b1'));
      // The retry took the second slot on its own (or, sharing b's insert that met the held key,
      // went back alone first in turn into it), and b waited for the key (or the 5 s lock timeout).
      expect((await within(2000, other, "b's POST")).status).toBe('created');
      await held.end();
      expect((await first).status).toBe('created');
      expect((await retry).status).toBe('existing');
    } finally {
      await held.end().catch(() => undefined);
    }
  });
});

describe('single POSTs of many tenants while a lock holds the whole jobs table', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApi({ ALMANAC_INGEST_COMMITS_IN_FLIGHT: '2', ALMANAC_PG_LOCK_TIMEOUT_MS: '1500' });
  });
  afterAll(() => h.close());

  it("fail together when their shared insert waited out the session's lock timeout: each tenant's own insert would wait as long again", async () => {
    const tenants = [await h.createTenant('lock-a'), await h.createTenant('lock-b'), await h.createTenant('lock-c')];
    const locker = h.db.dataSource.createQueryRunner();
    await locker.startTransaction();
    await locker.query('LOCK TABLE jobs IN SHARE MODE'); // a migration's DDL, say: taken before the insert sets its own lock_timeout
    try {
      const commit = h.app.get(IngestCommit);
      const t0 = Date.now();
      const results = await Promise.all(tenants.map((t, i) => commit.one(entry(t.id, `lock-${i}`))));
      expect(results.map((r) => r.status)).toEqual(['failed', 'failed', 'failed']);
      expect(Date.now() - t0).toBeLessThan(2800); // sent back alone, two slots: 1.5 s for the shared insert, then 3 s more
    } finally {
      await locker.rollbackTransaction();
      await locker.release();
    }
  });
});
