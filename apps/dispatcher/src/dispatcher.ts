import type { DeliveryMetrics, KindRoutes, ReadyQueues } from '@almanac/delivery';
import type { EnvelopeFlow } from '@almanac/platform';

/**
 * Routes hints to their pools (kind → pool: ALMANAC_POOLS, then the pool the kind registered in,
 * then `default`) and appends them to the pools' ready structures: one script call per pool,
 * sent together. Holds nothing: a hint is in its envelope until this call has landed, then in its
 * pool. Touches no job row.
 */
export class Dispatcher {
  constructor(
    private readonly routes: KindRoutes,
    private readonly ready: ReadyQueues,
    private readonly metrics: DeliveryMetrics,
  ) {}

  async handOff(flows: readonly EnvelopeFlow[], opts: { repair?: boolean } = {}): Promise<void> {
    const byPool = new Map<string, EnvelopeFlow[]>();
    for (const f of flows) {
      const pool = this.routes.pool(f.kind);
      const list = byPool.get(pool);
      if (list) list.push(f);
      else byPool.set(pool, [f]);
    }
    await Promise.all(
      [...byPool].map(async ([pool, list]) => {
        const added = await this.ready.pushFlows(pool, list, opts);
        if (added > 0) this.metrics.dispatched.inc({ pool, via: opts.repair ? 'repair' : 'hot' }, added);
      }),
    );
  }
}
