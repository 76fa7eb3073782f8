import { DEFAULT_SHARE, type TenantShare } from '@almanac/domain';
import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { KIND_SLOT, limitKeyBase, LimitSlots, type SlotAnswer, TENANT_SLOT } from './limit-slots';

describe('LimitSlots (Redis): limits every dispatcher replica sees alike', () => {
  let redis: TestRedis;
  let prefix: string;
  beforeAll(async () => {
    redis = await createTestRedis();
  });
  beforeEach(() => {
    prefix = `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`;
  });
  afterAll(async () => redis.cleanup());

  const share = (s: Partial<TenantShare>): TenantShare => ({ ...DEFAULT_SHARE, ...s });
  const tokenOf = (a: SlotAnswer): string => (a.granted ? a.token : '');
  const ask = (slots: LimitSlots, ids: string[], s: TenantShare, kind = 'http') => slots.acquire(ids.map((id) => ({ id, tenantId: 7, kind, share: s })));

  it('two replicas together never hand out more than maxConcurrency; a release frees a slot for either', async () => {
    const a = new LimitSlots(redis.connection, prefix);
    const b = new LimitSlots(redis.connection, prefix);
    const capped = share({ maxConcurrency: 3 });
    const fromA = await ask(a, ['1', '2'], capped);
    const fromB = await ask(b, ['3', '4'], capped);
    expect([...fromA, ...fromB].map((x) => x.granted)).toEqual([true, true, true, false]);
    expect(fromA[0]).toEqual({ granted: true, mask: TENANT_SLOT, token: expect.any(String) });
    expect(await a.held(7)).toBe(3);
    await a.release([{ id: '1', tenantId: 7, kind: 'http', mask: TENANT_SLOT, token: tokenOf(fromA[0]) }]);
    expect((await ask(b, ['4'], capped))[0].granted).toBe(true);
  });

  it('a slot whose holder vanished expires by itself, unless its run renews it', async () => {
    const slots = new LimitSlots(redis.connection, prefix);
    const capped = share({ maxConcurrency: 1 });
    const [held] = await ask(slots, ['1'], capped);
    const token = tokenOf(held);
    expect((await ask(slots, ['2'], capped))[0].granted).toBe(false);
    // The holder died long ago: its slot's expiry is in the past.
    const set = `${limitKeyBase(prefix, 7)}:c`;
    await redis.connection.zadd(set, Date.now() - 1, `1.${token}`);
    await redis.connection.pexpire(set, 50); // and the set itself is about to go: no acquire for a while
    await slots.renew([{ id: '1', tenantId: 7, kind: 'http', mask: TENANT_SLOT, token }]); // a renewal brings both back…
    expect(await redis.connection.pttl(set)).toBeGreaterThan(30_000);
    expect((await ask(slots, ['2'], capped))[0].granted).toBe(false);
    await redis.connection.zadd(set, Date.now() - 1, `1.${token}`); // …and without one the slot is gone
    expect((await ask(slots, ['2'], capped))[0].granted).toBe(true);
  });

  it('two copies of one row (an overdue-sweep copy) take a slot each, and releasing one keeps the other', async () => {
    const slots = new LimitSlots(redis.connection, prefix);
    const capped = share({ maxConcurrency: 5 });
    const [first] = await ask(slots, ['1'], capped);
    const [copy] = await ask(slots, ['1'], capped);
    expect(await slots.held(7)).toBe(2);
    await slots.release([{ id: '1', tenantId: 7, kind: 'http', mask: TENANT_SLOT, token: tokenOf(copy) }]); // the copy was dropped
    expect(await slots.held(7)).toBe(1);
    expect(tokenOf(first)).not.toBe(tokenOf(copy));
  });

  it('a kind named like an Object property is just a kind', async () => {
    const slots = new LimitSlots(redis.connection, prefix);
    const limited = share({ kindLimits: { http: { concurrency: 1 } } });
    expect((await ask(slots, ['1', '2'], limited, 'constructor')).map((a) => a.granted)).toEqual([true, true]);
  });

  it('a per-kind rate admits its burst at once and asks the rest to wait for their turn', async () => {
    const slots = new LimitSlots(redis.connection, prefix);
    const limited = share({ kindLimits: { http: { perSecond: 50 } } }); // burst 5, one every 20 ms
    const answers = await ask(slots, ['1', '2', '3', '4', '5', '6', '7'], limited);
    expect(answers.slice(0, 5).every((x) => x.granted && x.mask === 0)).toBe(true);
    const refused = answers.slice(5);
    expect(refused.every((x) => !x.granted && x.retryMs > 0 && x.retryMs <= 40)).toBe(true);
    // Another kind of the same tenant has no limit and is not asked here at all.
    expect((await ask(slots, ['8'], limited, 'email'))[0]).toMatchObject({ granted: true, mask: 0 });
  });

  it('a job must fit every limit of its tenant and kind; a refusal takes none of them', async () => {
    const slots = new LimitSlots(redis.connection, prefix);
    const both = share({ maxConcurrency: 10, kindLimits: { http: { concurrency: 1 } } });
    const [first, second] = await ask(slots, ['1', '2'], both);
    expect(first).toMatchObject({ granted: true, mask: TENANT_SLOT | KIND_SLOT });
    expect(second.granted).toBe(false);
    expect(await slots.held(7)).toBe(1); // the refused job holds no tenant slot
    expect(await slots.held(7, 'http')).toBe(1);
  });
});
