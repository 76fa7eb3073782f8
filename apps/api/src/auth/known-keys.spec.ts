import { hashApiKey, TenantKeysRepository, TenantsRepository } from '@almanac/persistence';
import { ManualClock } from '@almanac/platform';
import { createTestDatabase, type TestDatabase } from '@almanac/testing/test-db';
import { FULL_READ_EVERY_MS, KnownKeys, READ_GAP_MS } from './known-keys';

const hashOf = (apiKey: string) => hashApiKey(apiKey).toString('base64');

describe('KnownKeys (Postgres)', () => {
  let db: TestDatabase;
  let keys: TenantKeysRepository;
  let tenantId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    keys = new TenantKeysRepository(db.dataSource);
    tenantId = (await new TenantsRepository(db.dataSource).create('acme')).tenant.id;
  });
  afterAll(async () => db.drop());

  /** KnownKeys over the real table, recording the id each query reads above. */
  function known(clock = new ManualClock(0)) {
    const readAbove: number[] = [];
    const k = new KnownKeys((afterId, limit, settleMs) => (readAbove.push(afterId), keys.keyHashesAfter(afterId, limit, settleMs)), () => clock.now().getTime());
    return { k, readAbove, clock };
  }
  const make = async () => (await keys.create(tenantId))!;
  const settleAll = () => db.dataSource.query(`UPDATE tenant_keys SET created_at = now() - interval '10 minutes'`);

  it("reads on only from the settled keys, and finds a key whose insert took a lower id but committed after a later one's", async () => {
    const { k, readAbove } = known();
    const [a, b] = [await make(), await make()];
    await settleAll();
    await k.catchUp();
    expect([k.has(hashOf(a.apiKey)), k.has(hashOf(b.apiKey))]).toEqual([true, true]);
    const slow = db.dataSource.createQueryRunner();
    await slow.startTransaction();
    const late = (await keys.create(tenantId, slow.manager))!; // takes its id now, commits below
    const quick = await make();
    expect(quick.key.id).toBeGreaterThan(late.key.id);
    await k.catchUp();
    expect([k.has(hashOf(quick.apiKey)), k.has(hashOf(late.apiKey))]).toEqual([true, false]);
    await slow.commitTransaction();
    await slow.release();
    await k.catchUp();
    expect(k.has(hashOf(late.apiKey))).toBe(true); // a floor at the highest id read would have skipped it
    expect(readAbove).toEqual([0, b.key.id, b.key.id]); // never below the settled keys again
    await settleAll();
    await k.catchUp();
    await k.catchUp();
    expect(readAbove.slice(-1)).toEqual([quick.key.id]);
  });

  it('a full read, at most once a minute, drops a key revoked whose news never came; forget() drops it at once', async () => {
    const { k, clock } = known();
    const [a, b] = [await make(), await make()];
    await k.catchUp();
    await keys.revoke(tenantId, a.key.id);
    await keys.revoke(tenantId, b.key.id);
    k.forget(hashOf(b.apiKey));
    await k.catchUp();
    expect([k.has(hashOf(a.apiKey)), k.has(hashOf(b.apiKey))]).toEqual([true, false]);
    clock.advance(FULL_READ_EVERY_MS);
    await k.catchUp();
    expect(k.has(hashOf(a.apiKey))).toBe(false);
  });

  it('callers waiting share one read, which starts after each of them called', async () => {
    const { k, readAbove } = known();
    await Promise.all(Array.from({ length: 100 }, () => k.catchUp()));
    expect(readAbove).toEqual([0]);
    const before = k.catchUp(); // may start before the key below commits
    const key = await make();
    await k.catchUp(); // called after it did: waits for a read that started later
    await before;
    expect(k.has(hashOf(key.apiKey))).toBe(true);
  });

  it('a full read that fails is not tried again at once: reads go on from the floor until the next is due', async () => {
    const clock = new ManualClock(0);
    const readAbove: number[] = [];
    let databaseDown = false;
    const k = new KnownKeys(async (afterId, limit, settleMs) => {
      readAbove.push(afterId);
      if (databaseDown && afterId === 0) throw new Error('the full read failed');
      return keys.keyHashesAfter(afterId, limit, settleMs);
    }, () => clock.now().getTime());
    const a = await make();
    await settleAll();
    await k.catchUp();
    clock.advance(FULL_READ_EVERY_MS);
    databaseDown = true;
    await expect(k.catchUp()).rejects.toThrow('the full read failed');
    clock.advance(READ_GAP_MS);
    const b = await make();
    await k.catchUp(); // from the floor: not every key again while the database struggles
    expect(readAbove.slice(-1)[0]).toBeGreaterThanOrEqual(a.key.id);
    expect([k.has(hashOf(a.apiKey)), k.has(hashOf(b.apiKey))]).toEqual([true, true]);
  });

  it('moves its floor past revoked keys once settled, so later reads do not scan them again', async () => {
    const { k, readAbove } = known();
    const [live, revoked] = [await make(), await make()];
    await keys.revoke(tenantId, revoked.key.id);
    await settleAll();
    await k.catchUp();
    await k.catchUp();
    expect(readAbove.slice(-1)[0]).toBe(revoked.key.id); // not live.key.id, below the revoked one
    expect([k.has(hashOf(live.apiKey)), k.has(hashOf(revoked.apiKey))]).toEqual([true, false]);
  });
});
