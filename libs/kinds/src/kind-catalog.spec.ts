import type { KindRegistration } from '@almanac/persistence';
import { KindCatalog } from './kind-catalog';

/** An in-memory registry: the catalog's own logic (when to re-read, what to keep) is under test here; kinds.repository is tested against Postgres. */
class Registry {
  kinds: KindRegistration[] = [];
  reads = 0;
  failNext = false;
  async list(): Promise<KindRegistration[]> {
    this.reads++;
    if (this.failNext) {
      this.failNext = false;
      throw new Error('database unavailable');
    }
    return this.kinds.map((k) => ({ ...k }));
  }
}

const kind = (name: string, payloadSchema: Record<string, unknown> | null = null): KindRegistration => ({ kind: name, pool: 'default', timeoutMs: 1000, payloadSchema });

describe('KindCatalog', () => {
  it('re-reads when stale, and on a kind it does not know at most once per interval per kind', async () => {
    const registry = new Registry();
    registry.kinds = [kind('noop')];
    const catalog = new KindCatalog(registry, { maxAgeMs: 5000, missRefreshMs: 500 });
    await catalog.ensure([], 0);
    expect(registry.reads).toBe(1);
    await catalog.ensure(['noop'], 100);
    expect(registry.reads).toBe(1); // fresh, known
    registry.kinds.push(kind('report'));
    await catalog.ensure(['report'], 200);
    expect(registry.reads).toBe(2);
    expect(catalog.kinds()).toEqual(['noop', 'report']);
    await catalog.ensure(['teleport'], 300);
    await catalog.ensure(['teleport'], 400); // same unknown kind again within 500 ms: no read
    expect(registry.reads).toBe(3);
    await catalog.ensure(['warp'], 450); // another unknown kind: its own interval
    expect(registry.reads).toBe(4);
    await catalog.ensure(['noop'], 5500); // stale
    expect(registry.reads).toBe(5);
  });

  it('keeps its last copy when a read fails', async () => {
    const registry = new Registry();
    registry.kinds = [kind('noop')];
    const catalog = new KindCatalog(registry, { maxAgeMs: 0, missRefreshMs: 0 });
    await catalog.refresh(0);
    registry.failNext = true;
    await expect(catalog.refresh(1)).rejects.toThrow('database unavailable');
    expect(catalog.kinds()).toEqual(['noop']);
  });

  it('narrows to ALMANAC_KINDS when set, and checks payloads against the registered schema', async () => {
    const registry = new Registry();
    registry.kinds = [kind('noop'), kind('charge', { type: 'object', required: ['invoiceId'] })];
    const catalog = new KindCatalog(registry, { maxAgeMs: 5000, missRefreshMs: 0, restrict: new Set(['charge']) });
    await catalog.refresh(0);
    expect(catalog.kinds()).toEqual(['charge']);
    expect(catalog.get('noop')).toBeUndefined();
    await catalog.ensure(['noop'], 1); // not allowed here: no point re-reading for it
    expect(registry.reads).toBe(1);
    expect(catalog.checkPayload('charge', {})).toEqual([{ field: 'payload.invoiceId', rule: 'required', message: 'payload.invoiceId is required' }]);
    expect(catalog.checkPayload('charge', { invoiceId: 'x' })).toEqual([]);
  });

  it('a kind registered while a read is in flight is found: the miss joins that read, then reads again', async () => {
    const registry = new Registry();
    registry.kinds = [kind('noop')];
    const catalog = new KindCatalog(registry, { maxAgeMs: 5000, missRefreshMs: 500 });
    await catalog.refresh(0);
    const inFlight = catalog.refresh(100); // started before the kind exists
    registry.kinds.push(kind('late'));
    await catalog.ensure(['late'], 101);
    await inFlight;
    expect(catalog.get('late')).toBeDefined();
    expect(catalog.loaded).toBe(true);
  });

  it('is not loaded until a read succeeds', async () => {
    const registry = new Registry();
    registry.failNext = true;
    const catalog = new KindCatalog(registry, { maxAgeMs: 5000, missRefreshMs: 0 });
    await expect(catalog.refresh(0)).rejects.toThrow();
    expect(catalog.loaded).toBe(false);
  });
});
