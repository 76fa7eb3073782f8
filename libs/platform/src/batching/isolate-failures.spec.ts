import { runIsolated } from './isolate-failures';

const refused = Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });
const isValueError = (err: unknown) => (err as { code?: string }).code === '22P05';

/** A statement that refuses any batch holding a poisoned item, as Postgres refuses the whole statement. */
function store(poisoned: Set<string>) {
  const written: string[] = [];
  const calls: string[][] = [];
  const run = async (items: { id: string; tenant: number }[]) => {
    calls.push(items.map((i) => i.id));
    if (items.some((i) => poisoned.has(i.id))) throw refused;
    written.push(...items.map((i) => i.id));
  };
  return { run, written, calls };
}

describe('runIsolated', () => {
  const items = Array.from({ length: 16 }, (_, i) => ({ id: `j${i}`, tenant: i % 4 }));

  it('writes a clean batch in one call', async () => {
    const s = store(new Set());
    await runIsolated(items, { run: s.run, isValueError, setAside: async () => undefined });
    expect(s.calls).toHaveLength(1);
    expect(s.written).toHaveLength(16);
  });

  it("sets aside only the item whose value fails, after the other tenants' groups went through whole", async () => {
    const s = store(new Set(['j5']));
    const aside: string[] = [];
    await runIsolated(items, { run: s.run, isValueError, groupOf: (i) => i.tenant, setAside: async (i, err) => void aside.push(`${i.id}:${(err as Error).message}`) });
    expect(aside).toEqual(['j5:unsupported Unicode escape sequence']);
    expect(s.written.sort()).toEqual(items.map((i) => i.id).filter((id) => id !== 'j5').sort());
    // The batch, one call per tenant, then tenant 1's four items in halves (2, then 1 and 1).
    expect(s.calls.map((c) => c.length)).toEqual([16, 4, 4, 2, 1, 1, 2, 4, 4]);
  });

  it('throws a failure that is not about a value, for a retry of the whole batch', async () => {
    const down = Object.assign(new Error('Connection terminated'), { code: undefined });
    await expect(runIsolated(items, { run: async () => Promise.reject(down), isValueError, setAside: async () => undefined })).rejects.toBe(down);
  });
});
