import type { ExecutionRepository, UnclaimedReason } from '@almanac/persistence';
import type { Clock } from '@almanac/platform';
import type { Logger } from 'pino';
import type { DeliveryMetrics } from '../../worker/src/delivery/delivery-metrics';
import type { KindRoutes } from './kind-routes';
import type { PoolDelivery, PoolQueues } from './pool-queues';

/** A hot-queue job as the dispatcher reads it (name = kind, data {t, d}, id j-<row id>). */
export interface HotDelivery {
  id: string;
  kind: string;
  tenantId: number;
  dueMs: number;
}

export type DispatchResult =
  | { status: 'dispatched'; pool: string; attempt: number }
  | { status: 'dropped'; reason: Exclude<UnclaimedReason, 'not_due'> }
  /** Queued for a later time (rescheduled within the hot horizon): put the delivery back until then. */
  | { status: 'not_due'; runAt: Date };

export interface DispatcherOptions {
  repo: ExecutionRepository;
  routes: KindRoutes;
  pools: PoolQueues;
  clock: Clock;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** A delivery may claim a row due up to this much later (clock skew between Redis and us). */
  earlyMs: number;
}

/**
 * Turns due hot-queue deliveries into pool-queue deliveries. Per batch: one guarded claim
 * (queued → running, attempts + 1, lease) for all of them, one addBulk per pool, and — only
 * when something was not claimed — one read to say why. With several dispatchers the claim's
 * `WHERE state = 'q'` decides which one routes a job; the loser drops its copy.
 */
export class Dispatcher {
  constructor(private readonly o: DispatcherOptions) {}

  async dispatch(batch: readonly HotDelivery[]): Promise<DispatchResult[]> {
    const { repo, routes, pools, clock, metrics } = this.o;
    const now = clock.now();
    const byId = new Map<string, HotDelivery>();
    for (const d of batch) if (!byId.has(d.id)) byId.set(d.id, d);
    const unique = [...byId.values()];
    const claimed = await repo.claimForDispatch(
      unique.map((d) => ({ id: d.id, leaseMs: routes.leaseMs(d.kind) })),
      now,
      this.o.earlyMs,
    );

    const byPool = new Map<string, PoolDelivery[]>();
    const results = new Map<string, DispatchResult>();
    for (const c of claimed) {
      const pool = routes.pool(c.kind);
      let list = byPool.get(pool);
      if (!list) byPool.set(pool, (list = []));
      list.push({ id: c.id, tenantId: c.tenantId, kind: c.kind, attempt: c.attempt, dueMs: c.runAt.getTime() });
      results.set(c.id, { status: 'dispatched', pool, attempt: c.attempt });
    }
    try {
      await Promise.all([...byPool].map(([pool, items]) => pools.add(pool, items)));
    } catch (err) {
      // Claimed but not routed: the rows stay running until their lease expires and the
      // overdue sweep puts them back. Nothing is lost; it is late.
      this.o.logger.error({ err, jobs: claimed.length }, 'could not route claimed jobs to pool queues');
      throw err;
    }
    for (const [pool, items] of byPool) metrics.dispatched.inc({ pool }, items.length);

    if (claimed.length < unique.length) {
      const missing = unique.filter((d) => !results.has(d.id)).map((d) => d.id);
      for (const u of await repo.explainUnclaimed(missing, now, this.o.earlyMs)) {
        if (u.reason === 'not_due' && u.runAt) {
          results.set(u.id, { status: 'not_due', runAt: u.runAt });
          metrics.dropped.inc({ reason: 'not_due' });
        } else {
          const reason = u.reason === 'not_due' ? 'raced' : u.reason;
          results.set(u.id, { status: 'dropped', reason });
          metrics.dropped.inc({ reason });
        }
      }
    }
    return batch.map((d) => results.get(d.id) ?? { status: 'dropped', reason: 'raced' });
  }
}
