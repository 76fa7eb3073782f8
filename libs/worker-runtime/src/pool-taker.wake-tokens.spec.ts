import { DEFAULT_SHARE } from '@almanac/domain';
import { TAKE_BLOCK_MS, within } from '@almanac/platform';
import { createHarness, type DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { clearTakeLog, events, gate, ran, recordTakes, takerHandlers } from '@almanac/testing/pool-taker-rig';
import { pushHints } from '@almanac/testing/ready-hints';

/** The pool taker's wake tokens and pool timer: work a token announced is taken at once, passed on by a full lane, left for another worker at shutdown. */
describe('pool taker', () => {
  let h: DeliveryHarness;
  beforeEach(async () => {
    h = await createHarness({ handlers: takerHandlers });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    clearTakeLog();
    await destroyHarness(h);
  });

  it('takes at once the work a token announced to a blocking wait the loop had stopped racing', async () => {
    // Each run holds a limit slot, so its end wakes the loop to report it while its blocking wait
    // is still out; the next push lands just after that take, and the wait left behind gets its token.
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, maxConcurrency: 5 }]]));
    const [first] = await h.enqueue([{ kind: 'logged' }]);
    let second: { id: string; pushedAtMs: number; ran: Promise<void> } | undefined;
    let secondPushed!: () => void;
    const pushed = new Promise<void>((r) => (secondPushed = r));
    const takes = recordTakes({ afterTake: async (done) => {
      if (!done.includes(first) || second) return;
      const [id] = await h.enqueue([{ kind: 'logged' }]);
      const woke = takes.nextWoke();
      second = { id, pushedAtMs: Date.now(), ran: ran(id) };
      await h.hot.runOnce();
      await within(TAKE_BLOCK_MS, woke, 'the wait left behind answering with the push'); // it took the token
      secondPushed();
    } });
    const w = h.worker();
    await h.startWorker(w);
    await h.hot.runOnce();
    await within(5000, pushed, 'the second push');
    await within(5000, second!.ran, 'the second run');
    await w.taker.close(10_000);

    const secondRan = events.find((e) => e.what === `ran ${second!.id}`)!;
    expect(secondRan.atMs - second!.pushedAtMs).toBeLessThan(TAKE_BLOCK_MS / 2);
  });

  it('a full lane passes on a token that a wait it left behind took', async () => {
    // A rate limit makes the loop's timer, not its wait, start the take that fills the lane: the
    // wait is still out when the next push comes, and this worker has no slot for that work.
    const takes = recordTakes();
    await h.ready.syncShares('default', new Map([[1, { ...DEFAULT_SHARE, kindLimits: { gated: { perSecond: 5 } } }]]));
    const [one, two] = await h.enqueue([{ kind: 'gated' }, { kind: 'gated' }]);
    const opens = [gate(one), gate(two)];
    const bothRan = Promise.all([ran(one), ran(two)]);
    const w = h.worker({ concurrency: 2 });
    await h.startWorker(w);
    await h.hot.runOnce();
    await within(5000, bothRan, 'both rate-limited runs'); // the second 200 ms after the first, taken on the timer

    await h.enqueue([{ kind: 'logged' }]);
    const woke = takes.nextWoke();
    await h.hot.runOnce();
    await within(TAKE_BLOCK_MS, woke, 'the wait left behind answering with the push');
    const wake = `${h.ready.base('default')}:wake`;
    const passedOn = (async () => {
      while ((await h.redis.connection.llen(wake)) === 0) await new Promise((r) => setImmediate(r));
    })();
    await within(2000, passedOn, 'the token passed on');
    // Nothing more: the lane is full (rows due together run in no set order: ids made in one ms are not in insertion order).
    expect(events.filter((e) => e.what.startsWith('ran ')).map((e) => e.what).sort()).toEqual([`ran ${one}`, `ran ${two}`].sort());
    for (const open of opens) open();
    await w.taker.close(10_000);
  });

  it('a stopping worker that keeps the pool timer hands it on, and leaves the token for another worker, not its own last wait', async () => {
    let [takes, secondTake] = [0, () => undefined as void];
    const tookTwice = new Promise<void>((r) => (secondTake = r));
    recordTakes({ afterTake: async () => void (++takes === 2 && secondTake()) });
    // The push leaves a token: the first wait takes it, so the wait after the second take blocks.
    await pushHints(h.ready, 'default', [{ id: '999000001', tenantId: 1, kind: 'logged', dueMs: Date.now() + 60_000 }]);
    const w = h.worker();
    await h.startWorker(w);
    await tookTwice;
    const timer = `${h.ready.base('default')}:timer`;
    expect(await h.redis.connection.get(timer)).toMatch(new RegExp(`^${w.identity.id}:`));
    await w.taker.close(10_000);
    expect(await h.redis.connection.exists(timer)).toBe(0);
    expect(await h.redis.connection.llen(`${h.ready.base('default')}:wake`)).toBe(1);
  });
});
