import type { RedisClient } from '../redis/redis';
import { Ticker } from '../time/ticker';
import { within } from '../time/within';

/** How often the promoter publishes the top N and workers re-read it: Prometheus' scrape interval (the ServiceMonitor's 15 s). */
export const TOP_TENANTS_REFRESH_MS = 15_000;
/** A read or a publish of the set waits at most this for Redis. */
const REDIS_WAIT_MS = 2000;

/** The label of every tenant outside the published top N. */
export const OTHER_TENANT = 'other';

/** A damaged key must not turn into unbounded label values. */
const MAX_TOP = 100;

const topKey = (prefix: string) => `${prefix}:almanac:tenants:top`;

/**
 * Which tenants get a label of their own in per-tenant metrics: the top N by due backlog, chosen
 * by the promoter's tenant-backlog sweep and published in Redis (`<prefix>:almanac:tenants:top`,
 * ids joined by commas), so every role labels the same N tenants and the rest are `other`.
 * The label is the tenant id as a string: stable, short, and free of what a name may contain.
 */
export class TenantLabels {
  private top = new Set<number>();
  private readonly droppedListeners: ((label: string) => void)[] = [];
  private ticker: Ticker | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly waitMs = REDIS_WAIT_MS,
  ) {}

  /** The promoter's side: replaces the published set. */
  static async publish(redis: RedisClient, prefix: string, tenantIds: readonly number[], waitMs = REDIS_WAIT_MS): Promise<void> {
    await within(waitMs, redis.set(topKey(prefix), tenantIds.slice(0, MAX_TOP).join(',')), 'publish top tenants');
  }

  label(tenantId: number): string {
    return this.top.has(tenantId) ? String(tenantId) : OTHER_TENANT;
  }

  /** Called with each label that left the set, so its series can be removed. */
  onDropped(listener: (label: string) => void): void {
    this.droppedListeners.push(listener);
  }

  /** Reads the published set; on error or timeout the last one stays. */
  async refresh(): Promise<void> {
    const raw = await within(this.waitMs, this.redis.get(topKey(this.prefix)), 'read top tenants');
    const next = new Set((raw ?? '').split(',').filter((s) => /^\d+$/.test(s)).slice(0, MAX_TOP).map(Number));
    const dropped = [...this.top].filter((t) => !next.has(t));
    this.top = next;
    for (const t of dropped) for (const listener of this.droppedListeners) listener(String(t));
  }

  /** Refreshes now and every `intervalMs` until stop(); failures keep the last set. */
  start(intervalMs = TOP_TENANTS_REFRESH_MS): void {
    this.stop();
    this.ticker = new Ticker({ turn: () => this.refresh(), everyMs: intervalMs, onError: () => undefined, unref: true });
    this.ticker.start();
  }

  stop(): void {
    void this.ticker?.stop();
    this.ticker = undefined;
  }
}
