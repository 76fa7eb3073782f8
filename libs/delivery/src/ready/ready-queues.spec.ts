import { DEFAULT_SHARE, type TenantShare } from '@almanac/domain';
import type { Hint } from '@almanac/domain';
import { bytesUnder, createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { KIND_SLOT, ReadyQueues, TENANT_SLOT } from './ready-queues';
import { CONCURRENCY_RECHECK_MS, HELD_RECHECK_MS, SLOT_TTL_MS, TAKE_AHEAD_MS, TAKE_BLOCK_MS, TAKE_WAKE_AHEAD_MS } from '@almanac/platform';
import { pushHints } from '@almanac/testing/ready-hints';

describe('ReadyQueues (Redis): the pool ready structure and its one-step fair take', () => {
  let redis: TestRedis;
  let q: ReadyQueues;
  const now = Date.parse('2026-12-04T09:00:00.000Z');
  let seq = 0;
  const hints = (tenantId: number, n: number, kind = 'noop', dueMs = now): Hint[] =>
    Array.from({ length: n }, () => ({ id: String(1_000_000 + ++seq), tenantId, kind, dueMs }));
  const share = (s: Partial<TenantShare>): TenantShare => ({ ...DEFAULT_SHARE, ...s });
  const tenantsOf = (taken: { tenantId: number }[]) => taken.map((h) => h.tenantId);

  beforeAll(async () => {
    redis = await createTestRedis();
  });
  beforeEach(() => {
    q = new ReadyQueues(redis.connection, `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`);
  });
  afterAll(async () => redis.cleanup());

  it('hands hints over in due order, counts what waits, and keeps what a worker took until it finishes', async () => {
    const late = hints(1, 1, 'noop', now + 5)[0];
    const early = hints(1, 1, 'noop', now)[0];
    expect(await pushHints(q, 'default', [early, late])).toBe(2);
    expect((await q.waiting(['default'])).get('default')).toBe(2);
    const took = await q.take('default', 10, now, 'w1');
    expect(took.hints).toEqual([{ ...early, slots: 0, take: '1' }, { ...late, slots: 0, take: '1' }]); // both with the pool's first take
    expect(took.nextWakeMs).toBeNull();
    expect((await q.waiting(['default'])).get('default')).toBe(0);
    expect(await redis.connection.hkeys(`${q.base('default')}:taken:w1`)).toEqual([early.id, late.id]);
    await q.finish('default', 'w1', [took.hints[0]]);
    expect(await redis.connection.hkeys(`${q.base('default')}:taken:w1`)).toEqual([late.id]);
    expect((await q.take('default', 10, now, 'w1')).hints).toEqual([]);
  });

  it('takes only rows due within TAKE_AHEAD_MS: the rest of a flow waits in the pool, holding no slot, until just before its head is due', async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 5 })]]));
    const wakeAt = now + 40 - TAKE_WAKE_AHEAD_MS;
    const [due, soon, withSoon, later] = [now, now + 40, wakeAt + TAKE_AHEAD_MS, wakeAt + TAKE_AHEAD_MS + 1].map((d) => hints(1, 1, 'noop', d)[0]);
    await pushHints(q, 'default', [due, soon, withSoon, later]);
    const first = await q.take('default', 10, now, 'w1');
    expect(first.hints.map((x) => x.id)).toEqual([due.id]);
    expect(first.nextWakeMs).toBe(wakeAt);
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(1); // only the due row holds a slot
    expect((await q.take('default', 10, wakeAt - 1, 'w1')).hints).toEqual([]);
    const next = await q.take('default', 10, wakeAt, 'w1'); // the rows of the next TAKE_AHEAD_MS, together
    expect(next.hints.map((x) => x.id)).toEqual([soon.id, withSoon.id]);
    expect(next.nextWakeMs).toBe(later.dueMs - TAKE_WAKE_AHEAD_MS);
    expect((await q.take('default', 10, later.dueMs, 'w1')).hints.map((x) => x.id)).toEqual([later.id]);
    expect((await q.waiting(['default'])).get('default')).toBe(0);
  });

  it('takes every due row of a long flow, however many it reads first, and leaves the rest', async () => {
    const due = [...hints(1, 16), ...hints(1, 9, 'noop', now + TAKE_AHEAD_MS)];
    const later = hints(1, 30, 'noop', now + TAKE_AHEAD_MS + 1);
    await pushHints(q, 'default', [...due, ...later]);
    expect((await q.take('default', 100, now, 'w1')).hints.map((x) => x.id)).toEqual(due.map((x) => x.id));
    expect((await q.take('default', 5, later[0].dueMs, 'w1')).hints.map((x) => x.id)).toEqual(later.slice(0, 5).map((x) => x.id));
    expect((await q.waiting(['default'])).get('default')).toBe(25);
  });

  it('a take that runs out of steps among flows not due yet, with due work left, asks to be sent again at once', async () => {
    await pushHints(q, 'default', Array.from({ length: 300 }, (_, i) => hints(100 + i, 1, 'noop', now + 1000)[0]));
    await pushHints(q, 'default', hints(999, 1)); // sorts after every tenant above
    const take = await q.take('default', 1, now, 'w1');
    expect(take.hints).toEqual([]);
    expect(take.nextWakeMs).toBe(now);
    expect((await q.take('default', 1, now, 'w1')).hints.map((h) => h.tenantId)).toEqual([999]);
  });

  it('a repair or a give-back that puts a due row ahead of a flow waiting for its later head has it taken at once', async () => {
    const [later, overdue] = [hints(1, 1, 'noop', now + 1000)[0], hints(1, 1, 'noop', now - 60_000)[0]];
    await pushHints(q, 'default', [later]);
    expect((await q.take('default', 10, now, 'w1')).hints).toEqual([]);
    await pushHints(q, 'default', [overdue]);
    const taken = (await q.take('default', 10, now, 'w1')).hints;
    expect(taken.map((x) => x.id)).toEqual([overdue.id]);
    expect(await redis.connection.lrange(`${q.base('default')}:q:1:noop`, 0, -1)).toEqual([`${later.id}:${later.dueMs}`]);
    // A give-back alike: the taken row goes back ahead of the waiting flow and is taken again at once.
    expect(await q.giveBack('default', 'w1', taken)).toEqual([overdue.id]);
    expect((await q.take('default', 10, now, 'w2')).hints.map((x) => x.id)).toEqual([overdue.id]);
  });

  it('a full take passes the wake token on while a flow waits for its head: an idle worker learns when to take', async () => {
    const [later, due] = [hints(1, 1, 'noop', now + 50)[0], hints(2, 1, 'noop', now)[0]];
    await pushHints(q, 'default', [due, later]);
    await redis.connection.del(`${q.base('default')}:wake`);
    expect((await q.take('default', 1, now, 'w1')).hints.map((x) => x.id)).toEqual([due.id]);
    expect(await redis.connection.llen(`${q.base('default')}:wake`)).toBe(1);
    expect((await q.take('default', 5, now, 'w2')).nextWakeMs).toBe(later.dueMs - TAKE_WAKE_AHEAD_MS);
  });

  it('one idle worker keeps the timer for the next opening; the others wait for a token, and an earlier opening or a full take moves it', async () => {
    const later = hints(1, 1, 'noop', now + 500)[0];
    const wakeAt = later.dueMs - TAKE_WAKE_AHEAD_MS;
    await pushHints(q, 'default', [later]);
    const timer = `${q.base('default')}:timer`;
    expect((await q.take('default', 5, now, 'w1')).nextWakeMs).toBe(wakeAt);
    expect((await q.take('default', 5, now, 'w2')).nextWakeMs).toBeNull();
    expect((await q.take('default', 5, now, 'w1')).nextWakeMs).toBe(wakeAt); // its own timer, kept
    const ttl = await redis.connection.pttl(timer);
    expect(ttl).toBeGreaterThan(wakeAt - now + TAKE_BLOCK_MS - 100); // lasts past the opening: a dead keeper's mark goes by itself
    expect(ttl).toBeLessThanOrEqual(wakeAt - now + TAKE_BLOCK_MS);
    const sooner = hints(2, 1, 'noop', now + 100)[0];
    await pushHints(q, 'default', [sooner]);
    expect((await q.take('default', 5, now, 'w2')).nextWakeMs).toBe(sooner.dueMs - TAKE_WAKE_AHEAD_MS); // an earlier opening: w2 keeps it
    expect((await q.take('default', 5, now, 'w1')).nextWakeMs).toBeNull();
    expect((await q.take('default', 0, now, 'w1')).nextWakeMs).toBeNull(); // a full take by another: the mark stays
    expect(await redis.connection.get(timer)).toBe(`w2:${sooner.dueMs - TAKE_WAKE_AHEAD_MS}`);
    await redis.connection.del(`${q.base('default')}:wake`);
    // Full, or stopping (its last take is of nothing): the keeper will not take at the opening, so its mark goes and an idle worker is woken.
    expect((await q.take('default', 0, now, 'w2')).nextWakeMs).toBeNull();
    expect(await redis.connection.exists(timer)).toBe(0);
    expect(await redis.connection.llen(`${q.base('default')}:wake`)).toBe(1);
    expect((await q.take('default', 5, now, 'w1')).nextWakeMs).toBe(sooner.dueMs - TAKE_WAKE_AHEAD_MS);
  });

  it("a mark past its opening (its keeper late or gone) or malformed is taken over; a full take wakes nobody for an opening that is kept", async () => {
    const later = hints(1, 1, 'noop', now + 500)[0];
    await pushHints(q, 'default', [later]);
    const [timer, wake] = [`${q.base('default')}:timer`, `${q.base('default')}:wake`];
    for (const stale of [`w9:${now - 5}`, 'w9:']) {
      await redis.connection.set(timer, stale);
      expect((await q.take('default', 5, now, 'w1')).nextWakeMs).toBe(later.dueMs - TAKE_WAKE_AHEAD_MS);
    }
    await redis.connection.del(wake);
    expect((await q.take('default', 0, now, 'w2')).nextWakeMs).toBeNull();
    expect(await redis.connection.llen(wake)).toBe(0); // w1 takes at the opening
  });

  it('holds a burst of 200,000 due hints in a pool in under 100 bytes each (issue 31: a burst waits in Redis at ≤ 100 B a job)', async () => {
    const due = now - 1000;
    const ids = Array.from({ length: 200_000 }, (_, i) => String(119_352_210_347_848 + i));
    // As envelopes bring them: 1,000 rows each, of four tenants' two kinds.
    for (let i = 0; i < ids.length; i += 1000) {
      const flows = [1, 2, 3, 4].flatMap((tenantId) => ['noop', 'http'].map((kind) => ({ tenantId, kind, items: [] as string[] })));
      ids.slice(i, i + 1000).forEach((id, j) => flows[j % flows.length].items.push(`${id}:${due}`));
      await q.pushFlows('default', flows);
    }
    expect((await q.waiting(['default'])).get('default')).toBe(200_000);
    expect((await bytesUnder(redis.connection, q.base('default'))) / ids.length).toBeLessThan(100);
  });

  it("puts a quiet tenant's job next, however long a busy tenant's backlog", async () => {
    await pushHints(q, 'default', hints(1, 500));
    await pushHints(q, 'default', hints(2, 1));
    const first = await q.take('default', 2, now, 'w1');
    expect(tenantsOf(first.hints)).toContain(2);
    // Served while tenant 1 still had 498 waiting, and it keeps coming next as it sends more.
    await pushHints(q, 'default', hints(2, 1));
    expect(tenantsOf((await q.take('default', 2, now, 'w1')).hints)).toContain(2);
  });

  it('shares a busy pool by weight', async () => {
    await q.syncShares('default', new Map([[1, share({ weight: 3 })]]));
    await pushHints(q, 'default', [...hints(1, 300), ...hints(2, 300)]);
    const took = (await q.take('default', 200, now, 'w1')).hints;
    const ones = tenantsOf(took).filter((t) => t === 1).length;
    expect(ones).toBeGreaterThanOrEqual(148);
    expect(ones).toBeLessThanOrEqual(152);
  });

  it('takes no more of a tenant than its maxConcurrency until one finishes, while others go on', async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 2 })]]));
    await pushHints(q, 'default', [...hints(1, 5), ...hints(2, 2)]);
    const first = await q.take('default', 10, now, 'w1');
    expect(tenantsOf(first.hints).sort()).toEqual([1, 1, 2, 2]);
    expect(first.hints.filter((h) => h.tenantId === 1).every((h) => h.slots === TENANT_SLOT)).toBe(true);
    expect(first.nextWakeMs).toBe(now + CONCURRENCY_RECHECK_MS);
    expect((await q.take('default', 10, now + 1, 'w2')).hints).toEqual([]);
    await q.finish('default', 'w1', [first.hints.find((h) => h.tenantId === 1)!]); // wakes it at once
    expect(tenantsOf((await q.take('default', 10, now + 2, 'w2')).hints)).toEqual([1]);
  });

  it("applies a kind's concurrency and rate in the same step; a held-back kind does not hold the tenant's others", async () => {
    await q.syncShares('default', new Map([[1, share({ kindLimits: { http: { concurrency: 1 }, sms: { perSecond: 10 } } })]]));
    await pushHints(q, 'default', [...hints(1, 3, 'http'), ...hints(1, 3, 'sms'), ...hints(1, 2, 'noop')]);
    const first = await q.take('default', 10, now, 'w1');
    expect(first.hints.map((h) => h.kind).sort()).toEqual(['http', 'noop', 'noop', 'sms']);
    expect(first.hints.find((h) => h.kind === 'http')?.slots).toBe(KIND_SLOT);
    expect(first.nextWakeMs).toBe(now + 100); // 10/s: the next sms in 100 ms
    expect((await q.take('default', 10, now + 50, 'w1')).hints).toEqual([]);
    expect((await q.take('default', 10, now + 100, 'w1')).hints.map((h) => h.kind)).toEqual(['sms']);
  });

  it("holds a suspended tenant's jobs in Redis and lets them go once it is enabled", async () => {
    await q.syncShares('default', new Map([[1, share({ held: true })]]));
    await pushHints(q, 'default', [...hints(1, 2), ...hints(2, 1)]);
    expect(tenantsOf((await q.take('default', 10, now, 'w1')).hints)).toEqual([2]);
    await q.syncShares('default', new Map());
    expect((await q.take('default', 10, now + 10, 'w1')).hints).toEqual([]);
    expect(tenantsOf((await q.take('default', 10, now + HELD_RECHECK_MS, 'w1')).hints)).toEqual([1, 1]);
  });

  it('gives taken hints back to the head of their flows in due order, slots freed; a rescue takes everything a worker held', async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 1 })]]));
    const [a, b, c] = [...hints(1, 1, 'noop', now), ...hints(1, 1, 'noop', now + 1), ...hints(1, 1, 'noop', now + 2)];
    await pushHints(q, 'default', [a, b, c]);
    const taken = (await q.take('default', 10, now, 'w1')).hints;
    expect(taken.map((h) => h.id)).toEqual([a.id]);
    expect(await q.giveBack('default', 'w1', taken)).toEqual([a.id]);
    expect((await q.take('default', 1, now, 'w2')).hints.map((h) => h.id)).toEqual([a.id]);
    expect(await q.giveBack('default', 'w2', 'all')).toEqual([a.id]);
    expect(await redis.connection.exists(`${q.base('default')}:taken:w2`)).toBe(0);
    await q.syncShares('default', new Map());
    expect((await q.take('default', 10, now + CONCURRENCY_RECHECK_MS, 'w3')).hints.map((h) => h.id)).toEqual([a.id, b.id, c.id]);
  });

  it('keeps a flow in due order, whatever order its rows are handed over in: a row due now is not held behind later ones', async () => {
    const [older, old, waiting, mid, later, last] = [-90_000, -60_000, 0, 30, 60, 1000].map((d) => hints(1, 1, 'noop', now + d)[0]);
    await pushHints(q, 'default', [waiting, later, last]);
    expect(await pushHints(q, 'default', [older, old, mid])).toBe(3); // a repair's, and an overlapping envelope's
    const flow = await redis.connection.lrange(`${q.base('default')}:q:1:noop`, 0, -1);
    expect(flow).toEqual([older, old, waiting, mid, later, last].map((h) => `${h.id}:${h.dueMs}`));
    const [lost] = hints(2, 1, 'noop', now - 60_000);
    expect(await pushHints(q, 'default', [lost])).toBe(1); // an empty flow takes it as it is
    const [dueNow] = hints(3, 1, 'noop', now);
    await pushHints(q, 'default', hints(3, 3, 'noop', now + 140));
    expect((await q.take('default', 10, now, 'w1')).hints.map((h) => h.id).sort()).toEqual([older.id, old.id, waiting.id, lost.id].sort());
    await pushHints(q, 'default', [dueNow]); // a job due now, behind rows handed over 140 ms early
    expect((await q.take('default', 10, now, 'w1')).hints.map((h) => h.id)).toEqual([dueNow.id]);
  });

  it("gives a later copy of a row in a worker's taken hash (a lost reply's) to that worker again, one slot still, and keeps another worker's slots apart", async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 5 })]]));
    const [h] = hints(1, 1);
    await pushHints(q, 'default', [h]);
    await q.take('default', 10, now, 'w1'); // its reply lost: the worker never ran it
    await pushHints(q, 'default', [h, h]); // the overdue sweep's repair, twice
    expect((await q.take('default', 10, now, 'w1')).hints.map((x) => x.id)).toEqual([h.id]);
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(1);
    await pushHints(q, 'default', [h]);
    const w2Took = (await q.take('default', 10, now, 'w2')).hints;
    expect(w2Took.map((x) => x.id)).toEqual([h.id]);
    await q.finish('default', 'w2', w2Took); // frees w2's slot, not w1's
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(1);
  });

  it("gives back a row's entry only as the take named left it: a give-back landing after a later copy's take leaves that copy and its slot", async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 5 })]]));
    const [h] = hints(1, 1);
    await pushHints(q, 'default', [h]);
    const [first] = (await q.take('default', 10, now, 'w1')).hints;
    await pushHints(q, 'default', [h]); // a rescue's or a repair's copy, taken by the same worker: one entry, now the copy's
    const [copy] = (await q.take('default', 10, now, 'w1')).hints;
    expect(copy).toMatchObject({ id: h.id });
    expect(copy.take).not.toBe(first.take);
    expect(await q.giveBack('default', 'w1', [first])).toEqual([]); // the run's give-back, landing late
    expect(await redis.connection.hkeys(`${q.base('default')}:taken:w1`)).toEqual([h.id]);
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(1);
    expect((await q.take('default', 10, now, 'w2')).hints).toEqual([]);
    expect(await q.giveBack('default', 'w1', [copy])).toEqual([h.id]); // the copy's own goes back
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(0);
    expect((await q.take('default', 10, now, 'w2')).hints.map((x) => x.id)).toEqual([h.id]);
  });

  it("finishes a row's entry only as the take named left it (or one of the release before): a later copy's, maybe running, keeps its entry and slot", async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 5 })]]));
    const [h] = hints(1, 1);
    const taken = `${q.base('default')}:taken:w1`;
    await pushHints(q, 'default', [h]);
    const [first] = (await q.take('default', 10, now, 'w1')).hints;
    await pushHints(q, 'default', [h]); // a copy, taken (and started) once the first run ended
    const [copy] = (await q.take('default', 10, now, 'w1')).hints;
    await q.finish('default', 'w1', [first]); // the first run's done, sent after that take
    expect(await redis.connection.hkeys(taken)).toEqual([h.id]);
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(1);
    await q.take('default', 10, now, 'w1', [first]); // alike, with a take
    expect(await redis.connection.hkeys(taken)).toEqual([h.id]);
    await q.finish('default', 'w1', [copy]);
    expect(await redis.connection.exists(taken)).toBe(0);
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(0);
    await redis.connection.hset(taken, h.id, `${now}:1:0:noop`); // written by the release before
    await q.finish('default', 'w1', [copy]);
    expect(await redis.connection.exists(taken)).toBe(0);
  });

  it("gives back all a worker's entries but those named; a named row's entry of another take (a lost reply's copy) goes back as a hint, the entry the named take's again", async () => {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 5 })]]));
    const [ran, unseen] = hints(1, 2);
    const taken = `${q.base('default')}:taken:w1`;
    await pushHints(q, 'default', [ran]);
    const [run] = (await q.take('default', 10, now, 'w1')).hints;
    await pushHints(q, 'default', [ran, unseen]); // a copy of the row it runs, and another row: their take's reply lost
    expect((await q.take('default', 10, now, 'w1')).hints.map((x) => x.id)).toEqual([ran.id, unseen.id]);
    expect((await q.giveBack('default', 'w1', { except: [run] })).sort()).toEqual([ran.id, unseen.id]);
    expect(await redis.connection.hgetall(taken)).toEqual({ [ran.id]: `${now}:1:1:noop:${run.take}` }); // the run's, its slot kept
    expect(await redis.connection.zcard(`${q.prefix}:almanac:limit:1:c`)).toBe(1);
    expect((await q.take('default', 10, now, 'w2')).hints.map((x) => x.id)).toEqual([ran.id, unseen.id]);
    expect(await q.giveBack('default', 'w1', [run])).toEqual([ran.id]); // the run's own give-back, as it ends
  });

  /** A row taken by w1 under tenant 1's maxConcurrency, then (limits changed: a kind's concurrency instead) a copy of it by w1 again: their one entry. */
  async function runThenCopyUnderOtherLimits() {
    await q.syncShares('default', new Map([[1, share({ maxConcurrency: 5 })]]));
    const [h] = hints(1, 1);
    await pushHints(q, 'default', [h]);
    const [run] = (await q.take('default', 10, now, 'w1')).hints;
    expect(run.slots).toBe(TENANT_SLOT);
    await q.syncShares('default', new Map([[1, share({ kindLimits: { noop: { concurrency: 5 } } })]]));
    await pushHints(q, 'default', [h]); // a repair's copy
    const [copy] = (await q.take('default', 10, now, 'w1')).hints;
    expect(copy.slots).toBe(TENANT_SLOT | KIND_SLOT); // the run's slot, and the copy's
    const [tenantSlots, kindSlots] = [`${q.prefix}:almanac:limit:1:c`, `${q.base('default')}:limit:1:noop:c`];
    const expiries = async () => [Number(await redis.connection.zscore(tenantSlots, `${h.id}@w1`)), Number(await redis.connection.zscore(kindSlots, `${h.id}@w1`))];
    return { h, run, copy, expiries, held: async () => (await redis.connection.zcard(tenantSlots)) + (await redis.connection.zcard(kindSlots)) };
  }

  it("keeps the slots of a run and of a copy the same worker took of its row in their one entry: the run's is renewed while it runs and freed as the entry goes", async () => {
    const { h, run, copy, expiries, held } = await runThenCopyUnderOtherLimits();
    await q.renew('default', 'w1', [h.id], now + 60_000); // the run goes on: its tenant slot too, not only the copy's kind slot
    expect(await expiries()).toEqual([now + 60_000 + SLOT_TTL_MS, now + 60_000 + SLOT_TTL_MS]);
    expect(await q.giveBack('default', 'w1', [copy])).toEqual([h.id]); // the run ends: the copy's entry goes back, both slots freed
    expect(await held()).toBe(0);
    await q.finish('default', 'w1', [run]); // nothing left of the run's take
    expect(await redis.connection.llen(`${q.base('default')}:q:1:noop`)).toBe(1);
    expect((await q.take('default', 10, now + 60_000, 'w2')).hints.map((x) => x.id)).toEqual([h.id]);
  });

  it("a lost take's give-back that makes a copy's entry the run's again keeps the slots of both, renewed and freed with the run", async () => {
    const { h, run, expiries, held } = await runThenCopyUnderOtherLimits(); // the copy's reply lost: the worker never saw it
    expect(await q.giveBack('default', 'w1', { except: [run] })).toEqual([h.id]);
    expect(await redis.connection.hget(`${q.base('default')}:taken:w1`, h.id)).toBe(`${now}:1:${TENANT_SLOT | KIND_SLOT}:noop:${run.take}`);
    await q.renew('default', 'w1', [h.id], now + 60_000);
    expect(await expiries()).toEqual([now + 60_000 + SLOT_TTL_MS, now + 60_000 + SLOT_TTL_MS]);
    await q.finish('default', 'w1', [run]);
    expect(await held()).toBe(0);
  });

  it('wakes a worker blocked on the pool when work arrives', async () => {
    const blocking = redis.connection.duplicate();
    try {
      const woken = q.waitForWork(blocking, 'default', 5000);
      await pushHints(q, 'default', hints(1, 1));
      expect(await woken).toBe(true);
      expect(await q.waitForWork(blocking, 'default', 10)).toBe(false);
    } finally {
      blocking.disconnect();
    }
  });
});
