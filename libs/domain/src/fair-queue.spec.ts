import { FairQueue } from './fair-queue';
import { fairSplit } from './fairness';

interface Job {
  tenantId: number;
  kind: string;
  n: number;
}

function load(q: FairQueue<Job>, tenantId: number, count: number, weight = 1, kinds = ['a']): void {
  for (let n = 0; n < count; n++) q.push({ tenantId, kind: kinds[n % kinds.length], n }, weight);
}

function shares(taken: { item: Job }[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of taken) out.set(e.item.tenantId, (out.get(e.item.tenantId) ?? 0) + 1);
  return out;
}

describe('FairQueue', () => {
  it('gives backlogged tenants capacity in proportion to their weights, whatever their backlogs', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 10_000, 1);
    load(q, 2, 100, 3);
    const s = shares(q.take(40));
    expect(s.get(1)).toBe(10);
    expect(s.get(2)).toBe(30);
  });

  it('lets a light tenant go next, marked sparse, however much a heavy tenant has waiting', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 200_000);
    q.take(1000);
    const quiet = q.push({ tenantId: 2, kind: 'a', n: 0 }, 1);
    expect(quiet.sparse).toBe(true);
    expect(q.take(1)[0].item.tenantId).toBe(2);
    // The heavy tenant's own later arrivals are not sparse: it already has unserved work.
    expect(q.push({ tenantId: 1, kind: 'a', n: -1 }, 1).sparse).toBe(false);
  });

  it('gains a tenant nothing to spread its backlog over many kinds', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 1000, 1, ['a', 'b', 'c', 'd', 'e']);
    load(q, 2, 1000, 1, ['a']);
    const s = shares(q.take(100));
    expect(s.get(1)).toBe(50);
    expect(s.get(2)).toBe(50);
  });

  it('a tenant that sends faster than its share stops being sparse', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 1000);
    let sparse = 0;
    for (let i = 0; i < 20; i++) {
      // tenant 2 sends 3 items per item the queue hands out: three times its share
      for (let k = 0; k < 3; k++) if (q.push({ tenantId: 2, kind: 'a', n: i }, 1).sparse) sparse++;
      q.take(1);
    }
    expect(sparse).toBeLessThanOrEqual(2);
  });

  it('holds a kind that its limit refuses and serves the tenant’s other kinds and other tenants', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 10, 1, ['limited']);
    load(q, 1, 10, 1, ['free']);
    load(q, 2, 10, 1, ['free']);
    const taken = q.take(8, (j) => j.kind !== 'limited');
    expect(taken.every((e) => e.item.kind === 'free')).toBe(true);
    // Held items cost their tenant nothing: it keeps its half of what goes.
    expect(shares(taken).get(1)).toBe(4);
    expect(q.sizeOf(1)).toBe(16);
  });

  it('puts back hand-offs ahead of items of other kinds that arrived after them, even once the queue emptied', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 2, 1, ['a']);
    const taken = q.take(2); // the queue is empty now
    q.push({ tenantId: 1, kind: 'b', n: 100 }, 1);
    q.unshift(taken);
    expect(q.take(3).map((e) => e.item.n)).toEqual([0, 1, 100]);
  });

  it('puts back refused hand-offs at their heads, in order', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 5);
    const taken = q.take(3);
    q.unshift(taken);
    expect(q.take(5).map((e) => e.item.n)).toEqual([0, 1, 2, 3, 4]);
  });

  it('takes the newest items of the largest tenant when memory is short', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 100);
    load(q, 2, 5);
    expect(q.largestSize()).toBe(100);
    const evicted = q.evictFromLargest(10);
    expect(evicted.map((j) => j.n).sort((a, b) => a - b)).toEqual([90, 91, 92, 93, 94, 95, 96, 97, 98, 99]);
    expect(q.sizeOf(2)).toBe(5);
    // Across kinds too: the newest arrivals go, whatever their kind.
    const mixed = new FairQueue<Job>();
    load(mixed, 1, 10, 1, ['a', 'b']);
    expect(mixed.evictFromLargest(4).map((j) => j.n).sort((a, b) => a - b)).toEqual([6, 7, 8, 9]);
  });

  it('removes the items that waited too long from the heads of the lines', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 10);
    load(q, 2, 10);
    const old = q.removeOld((j) => j.n < 3);
    expect(old).toHaveLength(6);
    expect(q.size).toBe(14);
  });

  it('forgets every tag once empty, so a later episode starts even', () => {
    const q = new FairQueue<Job>();
    load(q, 1, 10);
    q.take(10);
    expect(q.size).toBe(0);
    expect(q.push({ tenantId: 1, kind: 'a', n: 0 }, 1)).toMatchObject({ sparse: true });
  });
});

describe('fairSplit', () => {
  it('splits room by weight, passing on what a capped tenant cannot use', () => {
    expect(fairSplit(400, [{ key: 'a', weight: 1, cap: 1e9 }, { key: 'b', weight: 3, cap: 1e9 }])).toEqual(new Map([['a', 100], ['b', 300]]));
    expect(fairSplit(400, [{ key: 'a', weight: 1, cap: 1e9 }, { key: 'b', weight: 1, cap: 3 }])).toEqual(new Map([['a', 397], ['b', 3]]));
    expect(fairSplit(2, [{ key: 'a', weight: 100, cap: 10 }, { key: 'b', weight: 0.01, cap: 10 }]).get('b')).toBe(1);
    expect([...fairSplit(0, [{ key: 'a', weight: 1, cap: 5 }]).values()]).toEqual([0]);
  });
});
