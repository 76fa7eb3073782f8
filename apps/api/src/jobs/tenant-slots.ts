/**
 * A budget of `most` things at once on this replica (single POSTs waiting for their commit, batch
 * requests being committed), of which one tenant holds at most `share` (half, at least one, unless
 * told): a tenant's flood within its rate fills its share, never the others'.
 */
export class TenantSlots {
  private held = 0;
  private readonly heldBy = new Map<number, number>();

  constructor(
    readonly most: number,
    /** What one tenant may hold at once. */
    readonly share = Math.max(1, Math.floor(most / 2)),
  ) {}

  /**
   * A slot for `tenantId`, given back by calling the release returned (once); or why not: `full`
   * (every slot is held), `share` (this tenant holds its share). Takes nothing when refused.
   */
  take(tenantId: number): (() => void) | 'full' | 'share' {
    const mine = this.heldBy.get(tenantId) ?? 0;
    if (this.held >= this.most) return 'full';
    if (mine >= this.share) return 'share';
    this.heldBy.set(tenantId, mine + 1);
    this.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      const left = (this.heldBy.get(tenantId) ?? 1) - 1;
      if (left > 0) this.heldBy.set(tenantId, left);
      else this.heldBy.delete(tenantId);
    };
  }
}
