import { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import { KindRoutes } from '@almanac/kinds';
import { type EnvelopeFlow, HANDOFF_RETRY_FOR_MS, retryHandOff } from '@almanac/platform';
import { Injectable } from '@nestjs/common';

/**
 * A hand-off of more rows than this is bulk: at most BULK_IN_FLIGHT bulk pushes are in Redis at
 * once, the rest wait here, so a hand-off of a few rows (a quiet tenant's job) lands behind at
 * most two bulk ones, not behind a whole burst. A burst's 200 envelopes of 1,000 rows, all pushed
 * at its due instant, took ~600 ms to land on 2 cores, and a quiet tenant's row handed off
 * meanwhile landed 150–230 ms after its due time (bench/fairness.ts, 2026-12-04).
 */
export const BULK_ROWS = 100;
const BULK_IN_FLIGHT = 2;

/**
 * Routes hints to their pools (KindRoutes) and appends them to the pools' ready lists: one script
 * call per pool, sent together. Holds nothing: a hint is in its envelope until this call landed.
 */
@Injectable()
export class Dispatcher {
  private bulkInFlight = 0;
  private readonly bulkWaiting: (() => void)[] = [];

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
    const rows = flows.reduce((n, f) => n + f.items.length, 0);
    // A refused push goes again to its pool alone, before the turn passes on (HANDOFF_RETRY_PAUSES).
    const push = (until = Date.now() + HANDOFF_RETRY_FOR_MS) =>
      Promise.all(
        [...byPool].map(async ([pool, list]) => {
          const added = await retryHandOff(() => this.ready.pushFlows(pool, list), until);
          if (added > 0) this.metrics.dispatched.inc({ pool, via: opts.repair ? 'repair' : 'hot' }, added);
        }),
      );
    // A few rows pass the waiting bulk hand-offs (the push keeps each flow in due order).
    if (rows <= BULK_ROWS) return void (await push());
    if (this.bulkInFlight >= BULK_IN_FLIGHT) await new Promise<void>((go) => this.bulkWaiting.push(go));
    else this.bulkInFlight++;
    try {
      await push();
    } finally {
      const next = this.bulkWaiting.shift(); // hands its turn on; the count stays
      if (next) next();
      else this.bulkInFlight--;
    }
  }
}
