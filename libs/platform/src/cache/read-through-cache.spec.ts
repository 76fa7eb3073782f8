import { ReadThroughCache } from './read-through-cache';

describe('ReadThroughCache', () => {
  let clock: number;
  const make = (maxEntries = 2) => new ReadThroughCache<string, string>({ ttlMs: 1000, maxEntries }, () => clock);
  beforeEach(() => (clock = 5_000));

  it('keeps a value a TTL from when its read started, then holds it as expired', async () => {
    const c = make();
    await c.load('a', async () => 'A');
    clock += 999;
    expect(c.fresh('a')).toBe('A');
    clock += 1;
    expect(c.fresh('a')).toBeUndefined();
    expect(c.peek('a')).toEqual({ value: 'A', expiredForMs: 0 });
  });

  it('shares one read among concurrent callers, and keeps only what `keep` accepts', async () => {
    const c = make();
    let reads = 0;
    let answer!: (v: string) => void;
    const read = () => {
      reads++;
      return new Promise<string>((r) => (answer = r));
    };
    const [x, y] = [c.load('a', read), c.load('a', read)];
    expect(c.reading('a')).toBe(x);
    answer('A');
    expect(await Promise.all([x, y])).toEqual(['A', 'A']);
    expect(reads).toBe(1);
    expect(c.reading('a')).toBeUndefined();
    await c.load('b', async () => 'no', (v) => v !== 'no');
    expect(c.peek('b')).toBeUndefined();
  });

  it('does not keep what a read in flight brings once its key was forgotten, and a later read starts afresh', async () => {
    const c = make();
    let answer!: (v: string) => void;
    const old = c.load('a', () => new Promise<string>((r) => (answer = r)));
    clock += 10;
    c.forget('a');
    expect(c.reading('a')).toBeUndefined();
    answer('revoked');
    await old;
    expect(c.peek('a')).toBeUndefined();
    clock += 1;
    await c.load('a', async () => 'again');
    expect(c.fresh('a')).toBe('again');
  });

  it('drops the entry read longest ago beyond maxEntries, and entries matching a test on demand', async () => {
    const c = make(2);
    c.set('a', 'A');
    c.set('b', 'B');
    c.set('a', 'A2'); // a is now the newest
    c.set('c', 'C');
    expect([c.fresh('a'), c.fresh('b'), c.fresh('c')]).toEqual(['A2', undefined, 'C']);
    c.dropWhere((v) => v.startsWith('A'));
    expect([c.fresh('a'), c.fresh('c')]).toEqual([undefined, 'C']);
  });
});
