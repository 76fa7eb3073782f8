import type { LookupAddress } from 'node:dns';

/** Name lookups in flight at once, over every tenant: libuv has 4 threads for them, Postgres' and the disk's work. */
export const LOOKUPS_IN_FLIGHT = 3;
/** One tenant's lookups in flight at once. */
export const LOOKUPS_PER_TENANT = 1;
/** A lookup (with its wait for a turn) answers within this, or fails with ETIMEOUT. */
export const LOOKUP_TIMEOUT_MS = 5000;

/**
 * Shares name lookups between tenants. A system lookup (getaddrinfo) runs in libuv's thread pool
 * and cannot be aborted, so one tenant's host whose DNS never answers held the threads that other
 * tenants' lookups and the worker's own Postgres reconnects need. Here a tenant has at most
 * LOOKUPS_PER_TENANT lookups in flight and all tenants LOOKUPS_IN_FLIGHT; a caller gives up after
 * LOOKUP_TIMEOUT_MS, and its turn stays taken until the lookup itself returns.
 */
export class LookupShares {
  private running = 0;
  private readonly perTenant = new Map<number, number>();
  private readonly waiting: { tenantId: number; go: () => void }[] = [];

  constructor(private readonly timeoutMs = LOOKUP_TIMEOUT_MS) {}

  resolve(tenantId: number, lookup: () => Promise<LookupAddress[]>): Promise<LookupAddress[]> {
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        const i = this.waiting.findIndex((w) => w.go === start);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(Object.assign(new Error(`DNS lookup took longer than ${this.timeoutMs} ms`), { code: 'ETIMEOUT' }));
      }, this.timeoutMs);
      timer.unref(); // a lookup's deadline never keeps the process up
      const start = () => {
        this.take(tenantId);
        lookup()
          .then(
            (v) => !timedOut && resolve(v),
            (err: unknown) => !timedOut && reject(err instanceof Error ? err : new Error(String(err))),
          )
          .finally(() => {
            clearTimeout(timer);
            this.release(tenantId);
          });
      };
      if (this.mayStart(tenantId)) start();
      else this.waiting.push({ tenantId, go: start });
    });
  }

  private mayStart(tenantId: number): boolean {
    return this.running < LOOKUPS_IN_FLIGHT && (this.perTenant.get(tenantId) ?? 0) < LOOKUPS_PER_TENANT;
  }

  private take(tenantId: number): void {
    this.running++;
    this.perTenant.set(tenantId, (this.perTenant.get(tenantId) ?? 0) + 1);
  }

  private release(tenantId: number): void {
    this.running--;
    const n = (this.perTenant.get(tenantId) ?? 1) - 1;
    if (n > 0) this.perTenant.set(tenantId, n);
    else this.perTenant.delete(tenantId);
    const i = this.waiting.findIndex((w) => this.mayStart(w.tenantId)); // the oldest that may go
    if (i >= 0) this.waiting.splice(i, 1)[0].go();
  }
}
