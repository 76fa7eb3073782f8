import type { DeliveryMetrics, ReadyQueues } from '@almanac/delivery';
import type { KindCatalog, KindRoutes } from '@almanac/kinds';
import type { TenantShare } from '@almanac/domain';
import type { TenantsRepository, WorkersRepository } from '@almanac/persistence';
import { type Clock, type DatabaseClock, type Liveness, LIVENESS_FLOOR_MS, POOL_OBSERVE_MS, Ticker, within, WORKER_DEAD_AFTER_MS, WORKER_REDIS_WAIT_MS } from '@almanac/platform';
import type { Logger } from 'pino';

export interface PoolObserverOptions {
  routes: KindRoutes;
  /** The kind registry: which pool runs each kind (routes' declared pools). */
  catalog: KindCatalog;
  /** Tenants' weights and limits (only those that differ from the default are listed). */
  tenants: Pick<TenantsRepository, 'listShares'>;
  ready: ReadyQueues;
  workers: WorkersRepository;
  metrics: DeliveryMetrics;
  clock: Clock;
  /** Set by the database's clock at each look, as the hot consumer's hold goes by it (a process: its DatabaseClock). */
  time?: DatabaseClock;
  logger: Logger;
  liveness?: Liveness;
}

/**
 * The dispatcher's once-a-second look beyond its envelopes: kind → pool as the workers registered
 * it; tenants' weights and limits, copied into each pool's ready lists (a PATCH takes effect
 * within about a second); the per-pool gauges and per-kind `almanac_kind_served`.
 */
export class PoolObserver {
  private readonly ticker: Ticker;
  /** The last copy read: a failed read keeps it, and before one succeeds the pools keep theirs (another dispatcher's). */
  private shares: ReadonlyMap<number, TenantShare> | undefined;
  private redisCalls: Promise<Map<string, number>> | undefined; // a turn's Redis part while pending
  private markKindsRead!: () => void;
  /** Resolves once the kind registry has been read: before, a kind declared in a pool of its own goes to `default`. */
  readonly kindsRead = new Promise<void>((resolve) => (this.markKindsRead = resolve));

  constructor(private readonly o: PoolObserverOptions) {
    this.ticker = new Ticker({
      turn: () => this.runOnce(),
      everyMs: POOL_OBSERVE_MS,
      firstAfterMs: POOL_OBSERVE_MS,
      onError: (err) => o.logger.error({ err }, 'dispatcher observe failed; retrying'),
      liveness: o.liveness && { of: o.liveness, name: 'dispatcher-observer', limitMs: LIVENESS_FLOOR_MS },
    });
  }

  async runOnce(): Promise<void> {
    const { routes, catalog, tenants, ready, metrics, logger } = this.o;
    await catalog.refresh(this.o.clock.now().getTime()).then(() => this.markKindsRead(), (err: unknown) => logger.warn({ err }, 'could not read the kind registry; routing by the last copy'));
    routes.setDeclared(new Map(catalog.all().map((k) => [k.kind, k.pool])));
    await tenants.listShares().then((s) => void (this.shares = s), (err: unknown) => logger.warn({ err }, "could not read tenants' weights and limits; using the last copy"));
    const sentMs = this.o.time?.local.now().getTime() ?? 0;
    const { dbNowMs, workers } = await this.o.workers.list();
    this.o.time?.observe(dbNowMs, sentMs);
    const pools = [...new Set([...routes.configuredPools(), ...workers.flatMap((w) => w.pools)])].sort();
    const shares = this.shares;
    // Bounded as the worker's calls (the delivery connection waits out an outage; a turn that never ends fails /health/live). Calls a turn
    // gave up on are waited for, not queued again each turn (all sent on reconnect): ioredis answers, resends or fails them once it reconnects.
    const backlogs = (this.redisCalls ??= Promise.all(shares ? pools.map((p) => ready.syncShares(p, shares)) : []).then(() => ready.waiting(pools)).finally(() => (this.redisCalls = undefined)));
    const waiting = await within(WORKER_REDIS_WAIT_MS, backlogs, "pools' ready lists").catch((err: unknown) => void logger.warn({ err }, "could not reach the pools' ready lists; gauging the workers only"));
    // Live: a beat within WORKER_DEAD_AFTER_MS by the database's own clock.
    const live = workers.filter((w) => dbNowMs - w.beatAtMs < WORKER_DEAD_AFTER_MS);
    for (const g of [metrics.poolWorkers, metrics.poolCapacity, metrics.poolInFlight]) g.reset(); // a pool whose last workers left is no longer gauged as it was
    for (const pool of pools) {
      const mine = live.filter((w) => w.pools.includes(pool));
      const serving = mine.filter((w) => !w.leaving);
      metrics.poolWorkers.set({ pool }, serving.length);
      metrics.poolCapacity.set({ pool }, serving.reduce((n, w) => n + w.concurrency, 0));
      metrics.poolInFlight.set({ pool }, mine.reduce((n, w) => n + (w.running[w.pools.indexOf(pool)] ?? 0), 0));
      const backlog = waiting?.get(pool); // none for a pool new since shared calls began
      if (backlog !== undefined) metrics.poolBacklog.set({ pool }, backlog);
    }
    metrics.kindServed.reset(); // a kind that moved or left loses its old series; no await before the sets, so no scrape sees it empty
    for (const [kind, pool] of catalog.all().map((k) => [k.kind, routes.pool(k.kind)] as const)) {
      metrics.kindServed.set({ kind, pool }, live.some((w) => !w.leaving && w.pools.includes(pool)) ? 1 : 0);
    }
  }

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }
}
