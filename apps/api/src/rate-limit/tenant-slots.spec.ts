import { TenantSlots } from './tenant-slots';

describe('TenantSlots', () => {
  it('gives a tenant at most its share and refuses past the whole budget, taking nothing when it refuses', () => {
    const slots = new TenantSlots(4, 3);
    const a = [1, 1, 1].map((t) => slots.take(t));
    expect(a.every((r) => typeof r === 'function')).toBe(true);
    expect(slots.take(1)).toBe('share');
    expect(typeof slots.take(2)).toBe('function');
    expect(slots.take(3)).toBe('full');
    expect(slots.heldBy(1)).toBe(3);
  });

  it('hands a slot that comes back to the tenant that waited for it, not to a quicker resend of a tenant that held one', async () => {
    // One tenant stuck at its share, a second importing one batch after another, a third arriving.
    const slots = new TenantSlots(4, 3);
    for (let i = 0; i < 3; i++) slots.take(1);
    const second = slots.take(2) as () => void;
    const third = slots.acquire(3, 10_000);
    second(); // the second tenant's batch ends; its next one arrives at once
    const secondAgain = slots.take(2);
    expect(typeof (await third)).toBe('function'); // a take only, the third was shed every time
    expect(secondAgain).toBe('full');
    expect(slots.heldBy(3)).toBe(1);
  });

  it('answers a waiter why once its wait runs out: full, or share for a tenant holding its share', async () => {
    jest.useFakeTimers();
    try {
      const slots = new TenantSlots(2, 1);
      const first = slots.take(1) as () => void;
      slots.take(2);
      const waiting = slots.acquire(3, 250);
      jest.advanceTimersByTime(250);
      expect(await waiting).toBe('full');
      first(); // nobody waits any more: the slot is free for the next take
      expect(slots.heldBy(3)).toBe(0);
      const roomy = new TenantSlots(3, 1);
      roomy.take(1);
      const own = roomy.acquire(1, 250); // at its share with a slot free: waits for one of its own
      jest.advanceTimersByTime(250);
      expect(await own).toBe('share');
      expect(roomy.heldBy(1)).toBe(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it("gives a tenant at its share its own freed slot, and no other tenant's", async () => {
    const slots = new TenantSlots(Number.POSITIVE_INFINITY, 2);
    const mine = [slots.take(1), slots.take(1)] as (() => void)[];
    const third = slots.acquire(1, 10_000);
    expect(typeof slots.take(2)).toBe('function'); // another tenant is not held by it
    (slots.take(2) as () => void)();
    expect(slots.heldBy(1)).toBe(2);
    mine[0]();
    const given = await third;
    expect(typeof given).toBe('function');
    expect(slots.heldBy(1)).toBe(2);
    (given as () => void)();
    mine[1]();
    expect(slots.heldBy(1)).toBe(0);
  });

  it('gives a slot back once however often its release is called', () => {
    const slots = new TenantSlots(1);
    const release = slots.take(1) as () => void;
    release();
    release();
    expect(typeof slots.take(2)).toBe('function');
    expect(slots.take(3)).toBe('full');
  });

  it('serves tenants in turn, so a tenant importing on four connections does not starve a third while a first holds its share', async () => {
    jest.useFakeTimers();
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      const slots = new TenantSlots(4, 3);
      for (let i = 0; i < 3; i++) slots.take(1);
      let stop = false;
      const lane = async () => {
        while (!stop) {
          const r = await slots.acquire(2, 250);
          if (typeof r === 'function') {
            await sleep(100); // a batch
            r();
          } else await sleep(1000); // Retry-After
        }
      };
      const lanes = [lane(), lane(), lane(), lane()];
      await jest.advanceTimersByTimeAsync(1_000);
      const outcomes: string[] = [];
      for (let k = 0; k < 5; k++) {
        const third = slots.acquire(3, 250);
        await jest.advanceTimersByTimeAsync(300);
        const r = await third;
        outcomes.push(typeof r === 'function' ? 'slot' : r);
        if (typeof r === 'function') r();
        await jest.advanceTimersByTimeAsync(1_000);
      }
      stop = true;
      await jest.advanceTimersByTimeAsync(5_000);
      await Promise.all(lanes);
      expect(outcomes).toEqual(Array(5).fill('slot')); // in arrival order: the second's three other waiters went first, every time
    } finally {
      jest.useRealTimers();
    }
  });

  it('stops a wait whose request was answered: the slot that comes back goes to a waiter still there', async () => {
    const slots = new TenantSlots(1);
    const held = slots.take(1) as () => void;
    const answered = new AbortController();
    const gone = slots.acquire(2, 10_000, answered.signal);
    const still = slots.acquire(3, 10_000);
    answered.abort();
    held();
    expect(await gone).toBe('full'); // not handed the slot, first in line as it was
    expect(typeof (await still)).toBe('function');
    expect(slots.heldBy(2)).toBe(0);
  });
});
