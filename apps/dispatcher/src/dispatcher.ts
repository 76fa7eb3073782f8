import type { DeliveryMetrics, KindCatalog, KindRoutes, ReadyLists, WorkerRoster } from '@almanac/delivery';
import type { BacklogItem, BacklogRepository } from '@almanac/persistence';
import type { Clock } from '@almanac/platform';
import type { Logger } from 'pino';
import type { PoolRoom } from './pool-room';
import { LineOutcome, WaitingLines } from './waiting-lines';

/** One row a hot-queue job delivers (a job carries one row, `j-<id>`, or an envelope of rows). */
export interface HotDelivery {
  id: string;
  kind: string;
  tenantId: number;
  dueMs: number;
  /** May answer `full` (wait in the pool's line, see waitForRoom) instead of parking. */
  mayWait?: boolean;
}

/**
 * handed_off: in the pool's ready list; parked: in the backlog until the pool has room; full:
 * the pool is alive but has no room this instant, and the caller may wait for it (waitForRoom).
 */
export type DispatchResult = { status: 'handed_off' | 'parked' | 'full'; pool: string };

export interface DispatcherOptions {
  routes: KindRoutes;
  /** The kind registry: which pool runs each kind (routes' declared pools), re-read on observe(). */
  catalog: KindCatalog;
  ready: ReadyLists;
  room: PoolRoom;
  roster: WorkerRoster;
  backlog: BacklogRepository;
  clock: Clock;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** Largest refill taken from the backlog for one pool at once. */
  maxRefill: number;
  /** Deliveries that may wait for room at once, over all pools (memory); the rest park. */
  maxWaiting: number;
  /** A waiting line whose pool frees no room for this long is parked (see WaitingLines). */
  stallMs: number;
  /** A delivery that has waited this long in a line parks (see WaitingLines). */
  maxWaitMs: number;
}

/**
 * Routes due jobs to their pools as far as the pools have room, and parks the rest. Touches no
 * job row: the worker claims a row (queued → running, attempt + 1, lease) as its handler starts,
 * so a job waiting for a worker, however long, costs no attempt. Per batch: one read of the
 * pools' room (Redis), one RPUSH per pool, and one INSERT into the backlog only when a pool is
 * full. A pool with a backlog gets new jobs parked behind it, so a pool drains in due order.
 */
export class Dispatcher {
  /** Pools with parked jobs (this replica's parking, plus what observe() finds in the table). */
  private readonly backlogged = new Set<string>();
  private readonly lines: WaitingLines;

  constructor(private readonly o: DispatcherOptions) {
    this.lines = new WaitingLines({ ...o, onParked: (pool) => this.backlogged.add(pool) });
  }

  async dispatch(batch: readonly HotDelivery[]): Promise<DispatchResult[]> {
    const { routes, ready, metrics } = this.o;
    const byPool = new Map<string, Map<string, HotDelivery>>();
    for (const d of batch) {
      const pool = routes.pool(d.kind);
      let items = byPool.get(pool);
      if (!items) byPool.set(pool, (items = new Map<string, HotDelivery>()));
      if (!items.has(d.id)) items.set(d.id, d);
    }
    const rooms = await this.o.room.rooms([...byPool.keys()], this.o.clock.now().getTime());
    const results = new Map<string, DispatchResult>();
    const park: BacklogItem[] = [];
    let mayWait = this.lines.free;
    await Promise.all(
      [...byPool].map(async ([pool, items]) => {
        const sorted = [...items.values()].sort((a, b) => a.dueMs - b.dueMs);
        const view = rooms.get(pool);
        // Behind parked jobs or a waiting line, new jobs queue up too: a pool drains in due order.
        const room = this.backlogged.has(pool) || this.lines.has(pool) ? 0 : (view?.room ?? 0);
        const direct = sorted.slice(0, room);
        await ready.push(pool, direct.map((d) => ({ id: d.id, dueMs: d.dueMs })));
        if (direct.length > 0) metrics.dispatched.inc({ pool, via: 'direct' }, direct.length);
        for (const d of direct) results.set(d.id, { status: 'handed_off', pool });
        // A live pool that is merely busy: waiting for room is cheaper than a round trip through
        // the backlog (measured ~40 µs of Postgres and dispatcher CPU per job in a burst).
        const alive = (view?.status.capacity ?? 0) > 0 && !this.backlogged.has(pool);
        for (const d of sorted.slice(room)) {
          if (alive && d.mayWait && mayWait > 0) {
            mayWait--;
            results.set(d.id, { status: 'full', pool });
          } else {
            park.push({ id: d.id, pool, runAt: new Date(d.dueMs) });
            results.set(d.id, { status: 'parked', pool });
          }
        }
      }),
    );
    if (park.length > 0) {
      await this.o.backlog.park(park);
      for (const p of park) this.backlogged.add(p.pool);
    }
    return batch.map((d) => results.get(d.id) as DispatchResult);
  }

  /** Shutdown: rows waiting for room are parked now rather than when their pools drain. */
  stopWaiting(): void {
    this.lines.close();
  }

  /** For deliveries answered `full`: each waits in its pool's line until handed off or parked. */
  waitForRoom(pool: string, deliveries: readonly HotDelivery[]): Promise<LineOutcome[]> {
    return this.lines.wait(pool, deliveries);
  }

  /** Moves parked jobs into the ready lists of pools that have room; returns how many. */
  async refillOnce(): Promise<number> {
    if (this.backlogged.size === 0) return 0;
    const pools = [...this.backlogged];
    const rooms = await this.o.room.rooms(pools, this.o.clock.now().getTime());
    let moved = 0;
    for (const pool of pools) {
      const want = Math.min(rooms.get(pool)?.room ?? 0, this.o.maxRefill);
      if (want <= 0) continue;
      const items = await this.o.backlog.take(pool, want);
      if (items.length < want) this.backlogged.delete(pool); // drained (observe() re-checks)
      try {
        await this.o.ready.push(pool, items.map((i) => ({ id: i.id, dueMs: i.runAt.getTime() })));
      } catch (err) {
        await this.o.backlog.park(items); // taken but not handed: back where they were
        throw err;
      }
      if (items.length > 0) this.o.metrics.dispatched.inc({ pool, via: 'backlog' }, items.length);
      moved += items.length;
    }
    return moved;
  }

  /**
   * Refreshes what the dispatcher knows beyond its own batches: kind → pool as the workers
   * registered it, which pools have a backlog (parked by any replica), and the per-pool gauges.
   */
  async observe(): Promise<void> {
    const { roster, routes, metrics, catalog } = this.o;
    const nowMs = this.o.clock.now().getTime();
    await catalog.refresh(nowMs).catch((err: unknown) => this.o.logger.warn({ err }, 'could not read the kind registry; routing by the last copy'));
    routes.setDeclared(new Map(catalog.all().map((k) => [k.kind, k.pool])));
    const counts = await this.o.backlog.counts();
    const pools = [...new Set([...routes.configuredPools(), ...(await roster.pools()), ...counts.keys()])].sort();
    const rooms = await this.o.room.rooms(pools, nowMs, true);
    for (const pool of pools) {
      const r = rooms.get(pool);
      const backlog = counts.get(pool) ?? 0;
      if (backlog > 0) this.backlogged.add(pool);
      metrics.poolWorkers.set({ pool }, r?.status.workers ?? 0);
      metrics.poolCapacity.set({ pool }, r?.status.capacity ?? 0);
      metrics.poolInFlight.set({ pool }, (r?.ready ?? 0) + (r?.status.running ?? 0));
      metrics.poolBacklog.set({ pool }, backlog);
    }
    for (const { kind } of catalog.all()) {
      const pool = routes.pool(kind);
      metrics.kindServed.set({ kind, pool }, (rooms.get(pool)?.status.workers ?? 0) > 0 ? 1 : 0);
    }
  }

  /** Deliveries waiting for room, over all pools (tests, tools). */
  get waitingCount(): number {
    return this.lines.size;
  }

  /** Pools known to have parked jobs (tests, tools). */
  get backloggedPools(): string[] {
    return [...this.backlogged].sort();
  }
}
