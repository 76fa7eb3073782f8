/** A slot given back by calling it (once; more calls do nothing). */
export type Release = () => void;

interface Waiter {
  give: (answer: Release) => void;
}

/**
 * A budget of `most` things at once on this replica (single POSTs waiting for their commit, batch
 * requests being committed, GET /v1/jobs/:id waits), of which one tenant holds at most `share`
 * (half, at least one, unless told): a tenant's flood within its rate fills its share, never the
 * others'.
 */
export class TenantSlots {
  private total = 0;
  private readonly byTenant = new Map<number, number>();
  /** Waits for a slot (acquire), per tenant in arrival order: a slot that comes back looks at tenants, not at every wait. */
  private readonly waiting = new Map<number, Set<Waiter>>();
  /** When each tenant holding a slot or waiting for one was last given one (a count of slots given): the longest unserved goes first. */
  private readonly servedAt = new Map<number, number>();
  private given = 0;

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
   * As take, but a refused tenant waits up to `waitMs` for a slot (less if `signal` aborts: its
   * request was answered), for a freed one when every slot is held, for one of its own when it
   * holds its share; tenants served in turn as slots come back, the one given a slot longest ago
   * first. Refused at once, a tenant that holds none lost every freed slot to others' quicker
   * resends; served in arrival order, to the waiters of a tenant importing on several connections
   * (two tenants' batches starved a third's). Past the wait, why take would refuse it then.
   */
  acquire(tenantId: number, waitMs: number, signal?: AbortSignal): Promise<Release | 'full' | 'share'> {
    const now = this.take(tenantId);
    if (typeof now !== 'string' || waitMs <= 0 || signal?.aborted) return Promise.resolve(now);
    return new Promise((resolve) => {
      const settle = (answer: Release | 'full' | 'share') => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', leave);
        resolve(answer);
      };
      const leave = () => {
        const queue = this.waiting.get(tenantId);
        if (!queue?.delete(waiter)) return; // given a slot already
        if (queue.size === 0) this.waiting.delete(tenantId);
        this.forget(tenantId);
        settle(this.total >= this.most ? 'full' : 'share'); // as take would answer now
      };
      const waiter: Waiter = { give: settle };
      const timer = setTimeout(leave, waitMs);
      signal?.addEventListener('abort', leave, { once: true });
      const queue = this.waiting.get(tenantId);
      if (queue) queue.add(waiter);
      else this.waiting.set(tenantId, new Set([waiter]));
    });
  }

  private hold(tenantId: number): Release {
    this.byTenant.set(tenantId, this.heldBy(tenantId) + 1);
    this.total++;
    this.servedAt.set(tenantId, ++this.given);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = this.heldBy(tenantId) - 1;
      if (left > 0) this.byTenant.set(tenantId, left);
      else this.byTenant.delete(tenantId);
      this.forget(tenantId);
      this.handOn();
    };
  }

  /** A slot that came back goes to the first waiter of the tenant under its share that was served longest ago (then the first to wait). */
  private handOn(): void {
    if (this.total >= this.most) return;
    let best: number | undefined;
    for (const t of this.waiting.keys()) {
      if (this.heldBy(t) >= this.share) continue;
      if (best === undefined || (this.servedAt.get(t) ?? 0) < (this.servedAt.get(best) ?? 0)) best = t;
    }
    if (best === undefined) return;
    const queue = this.waiting.get(best)!;
    const [waiter] = queue;
    queue.delete(waiter);
    if (queue.size === 0) this.waiting.delete(best);
    waiter.give(this.hold(best));
  }

  /** Drops a tenant's turn once it holds and waits for nothing, so the map stays as small as the tenants in it. */
  private forget(tenantId: number): void {
    if (this.heldBy(tenantId) === 0 && !this.waiting.has(tenantId)) this.servedAt.delete(tenantId);
  }
}
