import { MicroBatcher } from '@almanac/platform';
import { TenantFairOrder } from './tenant-fair-order';
import { TenantShares } from './tenant-shares';

describe('the hot consumer batches deliveries in fair order', () => {
  it("puts a light tenant's job in the next batch, however many of a burst's batches arrived first", async () => {
    const batches: number[][] = [];
    const shares = new TenantShares({ listShares: async () => new Map() });
    const batcher = new MicroBatcher(
      async (items: { tenantId: number; kind: string }[]) => {
        batches.push(items.map((i) => i.tenantId));
        return items.map(() => 'ok');
      },
      { maxBatch: 100, maxInFlight: 1, queue: new TenantFairOrder(shares) },
    );
    const burst = Array.from({ length: 1000 }, () => batcher.submit({ tenantId: 1, kind: 'noop' }));
    const quiet = batcher.submit({ tenantId: 2, kind: 'noop' });
    await Promise.all([...burst, quiet]);
    expect(batches).toHaveLength(11);
    expect(batches[0]).toContain(2); // in arrival order it would have been the eleventh batch
  });
});
