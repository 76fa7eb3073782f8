import { FairQueue } from '@almanac/domain';
import type { BatchQueue } from '@almanac/platform';
import type { TenantShares } from './tenant-shares';

/** What the order needs of a submitted hot job: whose it is, its kind, and how many rows it carries. */
interface Owned {
  readonly item: { tenantId: number; kind: string; rows: number };
}

/**
 * The hot consumer's batching queue in fair order (FairQueue over tenants, by weight, counted in
 * rows): a 200,000-row burst arrives as 400 envelopes at once, and in arrival order another
 * tenant's job submitted half a second later waited behind all of them (p99 8.5 s in
 * bench/fairness.ts). Now the next batch takes the light tenant's job first. A take counts rows,
 * so a batch holds about `n` rows however they are packed into hot jobs.
 */
export class TenantFairOrder<T extends Owned> implements BatchQueue<T> {
  private readonly q = new FairQueue<{ tenantId: number; kind: string; entry: T }>();

  constructor(private readonly shares: TenantShares) {}

  get size(): number {
    return this.q.size;
  }

  push(entry: T): void {
    const { tenantId, kind, rows } = entry.item;
    this.q.push({ tenantId, kind, entry }, this.shares.of(tenantId).weight, rows);
  }

  take(n: number): T[] {
    return this.q.take(n).map((e) => e.item.entry);
  }
}
