import { MicroBatcher } from '@almanac/platform';
import { TenantFairOrder } from './tenant-fair-order';
import { TenantShares } from './tenant-shares';

type Intake = { tenantId: number; kind: string; rows: number };

function batcherRecording(batches: Intake[][], maxBatch: number): MicroBatcher<Intake, string> {
  const shares = new TenantShares({ listShares: async () => new Map() });
  return new MicroBatcher(
    async (items: Intake[]) => {
      batches.push(items);
      return items.map(() => 'ok');
    },
    { maxBatch, maxInFlight: 1, queue: new TenantFairOrder(shares) },
  );
}

describe('the hot consumer batches hot jobs in fair order', () => {
  it("puts a light tenant's job in the next batch, however many of a burst's batches arrived first", async () => {
    const batches: Intake[][] = [];
    const batcher = batcherRecording(batches, 100);
    const burst = Array.from({ length: 1000 }, () => batcher.submit({ tenantId: 1, kind: 'noop', rows: 1 }));
    const quiet = batcher.submit({ tenantId: 2, kind: 'noop', rows: 1 });
    await Promise.all([...burst, quiet]);
    expect(batches).toHaveLength(11);
    expect(batches[0].map((i) => i.tenantId)).toContain(2); // in arrival order it would have been the eleventh batch
  });

  it('counts rows, not hot jobs: an envelope fills a batch, and single rows share one', async () => {
    const batches: Intake[][] = [];
    const batcher = batcherRecording(batches, 500);
    const envelopes = Array.from({ length: 10 }, () => batcher.submit({ tenantId: 1, kind: 'noop', rows: 500 }));
    const singles = Array.from({ length: 300 }, (_, i) => batcher.submit({ tenantId: 2 + (i % 3), kind: 'noop', rows: 1 }));
    await Promise.all([...envelopes, ...singles]);
    const rows = batches.map((b) => b.reduce((n, i) => n + i.rows, 0));
    // 10 × 500 + 300 rows in batches of about 500: counted in hot jobs, it would be one batch of 310
    expect(batches.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...rows)).toBeLessThan(1000);
    // an envelope costs its tenant 500 rows of share: the three light tenants' 300 rows all go
    // before the burst's second envelope
    const order = batches.flat();
    const secondEnvelope = order.findIndex((i, at) => i.rows === 500 && order.slice(0, at).some((j) => j.rows === 500));
    expect(order.map((i) => i.rows).lastIndexOf(1)).toBeLessThan(secondEnvelope);
  });
});
