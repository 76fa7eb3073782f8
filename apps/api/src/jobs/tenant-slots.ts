/**
 * A budget of `most` things at once on this replica (single POSTs waiting for their commit, batch
 * requests being committed, GET /v1/jobs/:id waits), of which one tenant holds at most `share` (half, at least one, unless
 * told): a tenant's flood within its rate fills its share, never the others'.
 */
export class TenantSlots {
  private total = 0;
  private readonly byTenant = new Map<number, number>();

  constructor(
    readonly most: number,
    /** What one tenant may hold at once. */
    readonly share = Math.max(1, Math.floor(most / 2)),
  ) {}

  /** Slots `tenantId` holds now. */
  heldBy(tenantId: number): number {
    return this.byTenant.get(tenantId) ?? 0;
  }

  /**
   * A slot for `tenantId`, given back by calling the release returned (once); or why not: `full`
   * (every slot is held), `share` (this tenant holds its share). Takes nothing when refused.
   */
  take(tenantId: number): (() => void) | 'full' | 'share' {
    const mine = this.byTenant.get(tenantId) ?? 0;
    if (this.total >= this.most) return 'full';
    if (mine >= this.share) return 'share';
    this.byTenant.set(tenantId, mine + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byTenant.get(tenantId) ?? 1) - 1;
      if (left > 0) this.byTenant.set(tenantId, left);
      else this.byTenant.delete(tenantId);
    };
  }
}
