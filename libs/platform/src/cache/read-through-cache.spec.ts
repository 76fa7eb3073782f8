import { ReadThroughCache, type ReadThroughCacheOptions } from './read-through-cache';

describe('ReadThroughCache', () => {
  let clock: number;
  let reads: string[];
  const cache = (o: Partial<ReadThroughCacheOptions<string | null>> = {}) =>
    new ReadThroughCache<string, string | null>({ ttlMs: 1_000, waitMs: 30, staleMs: 10_000, maxEntries: 2, now: () => clock, ...o });
  const reader = (answer: () => Promise<string | null>) => (key: string) => () => {
    reads.push(key);
    return answer();
  };
  const hang = () => new Promise<never>(() => undefined);

  beforeEach(() => {
    clock = 1_000_000;
    reads = [];
  });

  it('reads a key once per TTL, and concurrent callers share the read', async () => {
    const c = cache();
    const read = reader(async () => 'v');
    expect(await Promise.all([c.get('a', read('a'), 'a'), c.get('a', read('a'), 'a')])).toEqual(['v', 'v']);
    clock += 999;
    await c.get('a', read('a'), 'a');
    expect(reads).toEqual(['a']);
    clock += 1;
    await c.get('a', read('a'), 'a');
    expect(reads).toEqual(['a', 'a']);
  });

  it('bounds each wait; answers from an entry up to staleMs old while reads fail, and the callers behind do not each wait', async () => {
    const c = cache();
    await c.get('a', reader(async () => 'old')('a'), 'a');
    clock += 5_000;
    const failing = reader(async () => {
      throw new Error('connection refused');
    });
    expect(await c.get('a', failing('a'), 'a')).toBe('old');
    expect(await c.get('a', failing('a'), 'a')).toBe('old'); // within a TTL of the failure: not read again
    expect(reads).toEqual(['a', 'a']);
    clock += 5_001; // 10,001 ms after the read that succeeded
    await expect(c.get('a', reader(hang)('a'), 'rules of a')).rejects.toThrow(/rules of a did not answer within 30 ms/);
    await expect(c.get('b', failing('b'), 'b')).rejects.toThrow('connection refused');
  });

  it('keeps negative answers apart: a flood of them never evicts the others', async () => {
    const c = cache({ negative: { is: (v) => v === null, max: 2 } });
    await c.get('known', reader(async () => 'v')('known'), 'k');
    for (let i = 0; i < 100; i++) await c.get(`unknown ${i}`, reader(async () => null)(`unknown ${i}`), 'u');
    await c.get('known', reader(async () => 'v')('known'), 'k');
    await c.get('unknown 99', reader(async () => null)('unknown 99'), 'u');
    expect(reads.filter((k) => k === 'known' || k === 'unknown 99')).toEqual(['known', 'unknown 99']);
    await c.get('unknown 0', reader(async () => null)('unknown 0'), 'u'); // evicted by its own kind
    expect(reads.at(-1)).toBe('unknown 0');
  });

  it('a key forgotten while its read hangs is never answered from before: not from the read, not as a fallback', async () => {
    const c = cache();
    await c.get('a', reader(async () => 'before')('a'), 'a');
    clock += 1_001;
    let finish!: (v: string) => void;
    const pending = c.get('a', reader(() => new Promise((r) => (finish = r)))('a'), 'a');
    c.forget('a'); // revoked while the read hangs
    await expect(pending).rejects.toThrow(/did not answer/);
    finish('before'); // the read, started before the revocation, comes back
    await new Promise((r) => setImmediate(r));
    expect(await c.get('a', reader(async () => 'after')('a'), 'a')).toBe('after');
  });

  it('a caller whose read comes back after its key was forgotten reads again, and gets the answer after the revocation', async () => {
    const c = cache({ waitMs: 1_000 });
    let finish!: (v: string) => void;
    const pending = c.get('a', reader(() => new Promise((r) => (finish = r)))('a'), 'a');
    c.forget('a');
    finish('before');
    const again = reader(async () => null);
    expect(await Promise.race([pending, c.get('a', again('a'), 'a')])).toBeNull();
    expect(await pending).toBeNull();
  });

  it('gives a read the answer it replaces, and starts a new read past a hung one instead of joining it for ever', async () => {
    const c = cache({ waitMs: 200 }); // a read is taken for hung after 10 waits: 2,000 ms
    const seen: (string | null | undefined)[] = [];
    await c.get('a', async (previous) => (seen.push(previous), 'first'), 'a');
    clock += 1_000;
    expect(await c.get('a', (previous) => (seen.push(previous), hang()), 'a')).toBe('first'); // the stale answer
    clock += 1_000; // the hung read is 1,000 ms old: joined
    expect(await c.get('a', async () => 'unused', 'a')).toBe('first');
    clock += 1_000; // 2,000 ms: a new read
    expect(await c.get('a', async (previous) => (seen.push(previous), 'second'), 'a')).toBe('second');
    expect(seen).toEqual([undefined, 'first', 'first']);
  });

  it('forgetWhere drops the matching entries and keeps nothing from reads in flight', async () => {
    const c = cache({ maxEntries: 10 });
    await c.get('a', reader(async () => 'tenant 7')('a'), 'a');
    await c.get('b', reader(async () => 'tenant 8')('b'), 'b');
    let finish!: (v: string) => void;
    let calls = 0;
    const pending = c.get('c', reader(() => (++calls === 1 ? new Promise((r) => (finish = r)) : Promise.resolve('tenant 9')))('c'), 'c');
    c.forgetWhere((v) => v === 'tenant 7');
    finish('tenant 7'); // read before the change: its caller reads again
    expect(await pending).toBe('tenant 9');
    await c.get('a', reader(async () => 'tenant 7')('a'), 'a');
    await c.get('b', reader(async () => 'tenant 8')('b'), 'b');
    await c.get('c', reader(async () => 'unused')('c'), 'c');
    expect(reads).toEqual(['a', 'b', 'c', 'c', 'a']);
  });

  it('keeps nothing with a TTL of 0', async () => {
    const c = cache({ ttlMs: 0 });
    for (let i = 0; i < 3; i++) await c.get('a', reader(async () => 'v')('a'), 'a');
    expect(reads).toEqual(['a', 'a', 'a']);
  });
});
