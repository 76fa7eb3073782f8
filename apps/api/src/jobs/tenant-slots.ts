/** A slot given back by calling it (once; more calls do nothing). */
export type Release = () => void;

/**
 * A budget of `most` things at once on this replica (single POSTs waiting for their commit, batch
 * requests being committed, GET /v1/jobs/:id waits), of which one tenant holds at most `share`
 * (half, at least one, unless told): a tenant's flood within its rate fills its share, never the
 * others'.
 */
export class TenantSlots {
  private total = 0;
  private readonly byTenant = new Map<number, number>();
  /** Tenants under their share waiting for a slot (acquire), in arrival order. */
  private readonly waiters: { tenantId: number; give: (release: Release) => void }[] = [];

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
   * A slot for `tenantId` now; or why not: `full` (every slot is held), `share` (this tenant holds
   * its share). Takes nothing when refused.
   */
  take(tenantId: number): Release | 'full' | 'share' {
    if (this.total >= this.most) return 'full';
    if (this.heldBy(tenantId) >= this.share) return 'share';
    return this.hold(tenantId);
  }

  /**
   * As take, but when every slot is held a tenant under its share waits up to `waitMs` for one,
   * served in arrival order as slots come back: refused at once, a tenant that holds none lost to
   * others' quicker resends (two tenants' steady batches took every free slot from a third's).
   */
  acquire(tenantId: number, waitMs: number): Promise<Release | 'full' | 'share'> {
    const now = this.take(tenantId);
    if (now !== 'full' || waitMs <= 0) return Promise.resolve(now);
    if (this.heldBy(tenantId) >= this.share) return Promise.resolve('full'); // as take answers it: it would wait for nothing
    return new Promise((resolve) => {
      const waiter = { tenantId, give: (release: Release) => (clearTimeout(timer), resolve(release)) };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        resolve('full');
      }, waitMs);
      this.waiters.push(waiter);
    });
  }

  private hold(tenantId: number): Release {
    this.byTenant.set(tenantId, this.heldBy(tenantId) + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = this.heldBy(tenantId) - 1;
      if (left > 0) this.byTenant.set(tenantId, left);
      else this.byTenant.delete(tenantId);
      this.handOn();
    };
  }

  /** A slot that came back goes to the first waiter still under its share. */
  private handOn(): void {
    const i = this.waiters.findIndex((w) => this.heldBy(w.tenantId) < this.share);
    if (i < 0 || this.total >= this.most) return;
    const [waiter] = this.waiters.splice(i, 1);
    waiter.give(this.hold(waiter.tenantId));
  }
}
