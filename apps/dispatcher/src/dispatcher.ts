import type { DeliveryMetrics, KindCatalog, KindRoutes, ReadyLists, WorkerRoster } from '@almanac/delivery';
import { fairSplit, type ShareClaim } from '@almanac/domain';
import { type BacklogItem, type BacklogRepository, flowKey, flowOf } from '@almanac/persistence';
import { type Clock, MicroBatcher } from '@almanac/platform';
import type { Logger } from 'pino';
import { FairLines, LineOutcome } from './fair-lines';
import type { LimitGate } from './limit-gate';
import type { PoolRoom } from './pool-room';
import type { TenantShares } from './tenant-shares';

/** A tenant with no direct hand-off to a pool for this long is sparse there (≤ 10 rows a second). */
const SPARSE_GAP_MS = 100;
/** Tenants remembered per pool before the ones past the gap are forgotten. */
const MAX_DIRECT_TENANTS = 10_000;

/** Parking INSERTs take up to this many dispatch batches' rows (4 envelopes: 2,000 rows). */
const MAX_PARK_CHUNKS = 4;

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
  /** Tenants' weights and limits (re-read on observe()). */
  shares: TenantShares;
  /** Per-tenant and per-kind limits at hand-off. */
  gate: LimitGate;
  clock: Clock;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** Largest refill taken from the backlog for one pool at once. */
  maxRefill: number;
  /** Deliveries that may wait for room at once, over all pools (memory); beyond it the largest tenant parks. */
  maxWaiting: number;
  /** A waiting line whose pool frees no room for this long is parked (see FairLines). */
  stallMs: number;
  /** A delivery that has waited this long in a line parks (see FairLines). */
  maxWaitMs: number;
}

/**
 * Routes due jobs to their pools as far as the pools have room, fairly between tenants, and parks
 * the rest. Touches no job row: the worker claims a row (queued → running, attempt + 1, lease) as
 * its handler starts, so a job waiting for a worker, however long, costs no attempt. An idle pool
 * is handed jobs directly (one read of its room, one RPUSH per batch); a busy one gets them
 * through its fair line (FairLines), which also enforces limits. A tenant with parked jobs in a
 * pool gets its new jobs parked behind them, so each tenant's jobs drain in due order, and the
 * backlog refills tenant by tenant (by weight), never one tenant's whole backlog first.
 */
export class Dispatcher {
  /**
   * Per pool, the flows (tenant and kind, `flowKey`) with parked jobs and about how many: this
   * replica's parking, plus what observe() finds in the table.
   */
  private readonly backlogged = new Map<string, Map<string, number>>();
  private readonly lines: FairLines;
  /** Where the next refill starts among a pool's flows: each gets its turn to be first. */
  private turn = 0;

  /**
   * Rows a dispatch parks, written one INSERT at a time (the batches that come meanwhile go
   * together, up to 2,000 rows): the hot consumer's batcher no longer waits for them, so without
   * this bound a burst's 300 parking batches ran as many INSERTs at once as the pool had
   * connections, and every other statement waited behind them.
   */
  private readonly parking: MicroBatcher<BacklogItem[], void>;
  /**
   * Rows given to `parking` whose INSERT has not landed, per pool and flow: a refill that finds
   * fewer rows than a flow counted keeps the flow while some are still on their way, or its newer
   * rows would be handed off ahead of them until observe() noticed (found in review).
   */
  private readonly parkingFlows = new Map<string, number>();
  /** Per pool, when each tenant last had a row handed over directly (see directSparse). */
  private readonly lastDirect = new Map<string, Map<number, number>>();

  constructor(private readonly o: DispatcherOptions) {
    this.lines = new FairLines({ ...o, onParked: (pool, items) => this.markParked(pool, items) });
    this.parking = new MicroBatcher((chunks: BacklogItem[][]) => this.o.backlog.park(chunks.flat()).then(() => chunks.map(() => undefined)), {
      maxBatch: MAX_PARK_CHUNKS,
      maxInFlight: 1,
    });
  }

  /** Dispatches a batch; resolves once every row is handed off, answered `full`, or parked. */
  async dispatch(batch: readonly HotDelivery[]): Promise<DispatchResult[]> {
    const { results, parked } = await this.dispatchAside(batch);
    await parked;
    return results;
  }

  /**
   * Dispatches a batch and answers as soon as every row's fate is decided and the hand-offs are
   * in Redis; the rows to park are written by `parked`, which the caller awaits before it lets
   * their hot jobs go. The hot consumer's batcher frees its slot without waiting for that INSERT:
   * at a 200,000-row burst's start, 150,000 rows park in INSERTs of an envelope's 500, and a light
   * tenant's job waited behind two of them for its turn in the batcher.
   */
  async dispatchAside(batch: readonly HotDelivery[]): Promise<{ results: DispatchResult[]; parked: Promise<void> }> {
    const { routes, ready, metrics, gate } = this.o;
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
        const view = rooms.get(pool);
        const parked = this.backlogged.get(pool);
        const alive = (view?.status.capacity ?? 0) > 0;
        // Behind a waiting line, new jobs join it (it orders them fairly); a pool nobody waits for
        // is handed jobs directly, except limited tenants', which go through the line's gate.
        let room = this.lines.has(pool) ? 0 : (view?.room ?? 0);
        const direct: HotDelivery[] = [];
        // Memory: once it is full, only a tenant with less waiting than the largest (counting what
        // this batch sends to the line) may still wait. Counting the line alone let a 200,000-row
        // burst's every row wait, and the line then parked 150,000 of them in one turn while a
        // light tenant's job waited behind it (~7 s in bench/fairness.ts).
        const joining = new Map<number, number>();
        let largest = this.lines.largestSize(pool);
        const waitingOf = (t: number) => this.lines.sizeOf(pool, t) + (joining.get(t) ?? 0);
        for (const d of [...items.values()].sort((a, b) => a.dueMs - b.dueMs)) {
          if (parked?.has(flowKey(d)) || this.o.shares.of(d.tenantId).held) {
            park.push(backlogItem(d, pool)); // behind its flow's parked jobs (due order per flow), or suspended
            results.set(d.id, { status: 'parked', pool });
          } else if (room > 0 && !gate.limited(d)) {
            room--;
            direct.push(d);
            results.set(d.id, { status: 'handed_off', pool });
          } else if (alive && d.mayWait && (mayWait > 0 || waitingOf(d.tenantId) < largest)) {
            mayWait--; // beyond memory the largest tenant's newest park (FairLines)
            joining.set(d.tenantId, (joining.get(d.tenantId) ?? 0) + 1);
            largest = Math.max(largest, waitingOf(d.tenantId));
            results.set(d.id, { status: 'full', pool });
          } else {
            park.push(backlogItem(d, pool));
            results.set(d.id, { status: 'parked', pool });
          }
        }
        const nowMs = this.o.clock.now().getTime();
        const sparse = new Set(direct.filter((d) => this.directSparse(pool, d.tenantId, nowMs)));
        const item = (d: HotDelivery) => ({ id: d.id, dueMs: d.dueMs });
        await ready.push(pool, direct.filter((d) => !sparse.has(d)).map(item), direct.filter((d) => sparse.has(d)).map(item));
        if (direct.length > 0) metrics.dispatched.inc({ pool, via: 'direct' }, direct.length);
      }),
    );
    // Counted as parked before the INSERT lands: their flows' newer rows park behind them.
    for (const p of park) this.markParked(p.pool, [p]);
    const parked = park.length > 0 ? this.parkBeside(park) : Promise.resolve();
    parked.catch(() => undefined); // the caller's await sees the failure; never unhandled meanwhile
    return { results: batch.map((d) => results.get(d.id) as DispatchResult), parked };
  }

  /**
   * The sparse rule where no line is waiting: a row whose tenant had none handed to this pool
   * directly for SPARSE_GAP_MS goes to the head of the ready list. The list may hold a pool's
   * worth of a heavy tenant's refilled rows while the pool has room: a light tenant's job
   * appended behind them waited 90–140 ms for a slot (a traced run of bench/fairness.ts, the
   * worst quiet jobs). At most one row per tenant per gap goes first, so a tenant streaming rows
   * never jumps its own older ones, nor keeps others behind it.
   */
  private directSparse(pool: string, tenantId: number, nowMs: number): boolean {
    let last = this.lastDirect.get(pool);
    if (!last) this.lastDirect.set(pool, (last = new Map<number, number>()));
    const before = last.get(tenantId);
    last.set(tenantId, nowMs);
    if (last.size > MAX_DIRECT_TENANTS) for (const [t, at] of last) if (nowMs - at >= SPARSE_GAP_MS) last.delete(t);
    return before === undefined || nowMs - before >= SPARSE_GAP_MS;
  }

  private parkBeside(park: BacklogItem[]): Promise<void> {
    const keys = park.map((p) => `${p.pool}|${flowKey(p)}`);
    for (const k of keys) this.parkingFlows.set(k, (this.parkingFlows.get(k) ?? 0) + 1);
    const done = () => {
      for (const k of keys) {
        const n = (this.parkingFlows.get(k) ?? 1) - 1;
        if (n > 0) this.parkingFlows.set(k, n);
        else this.parkingFlows.delete(k);
      }
    };
    return this.parking.submit(park).finally(done);
  }

  /** Shutdown: rows waiting for room are parked now rather than when their pools drain. */
  stopWaiting(): void {
    this.lines.close();
  }

  /** Shutdown, after stopWaiting(): resolves once the lines' pumps and parking are done. */
  settled(): Promise<void> {
    return this.lines.settled();
  }

  /**
   * Whether one row of this tenant and kind, dispatched now, would go to its pool's light lane:
   * the pool's line is waiting, the tenant has nothing parked or waiting there and owes nothing.
   */
  goesLight(kind: string, tenantId: number): boolean {
    const pool = this.o.routes.pool(kind);
    return !this.backlogged.get(pool)?.has(flowKey({ tenantId, kind })) && this.lines.wouldBeLight(pool, tenantId);
  }

  /** For deliveries answered `full`: each waits in its pool's fair line until handed off or parked. */
  waitForRoom(pool: string, deliveries: readonly HotDelivery[]): Promise<LineOutcome[]> {
    return this.lines.wait(pool, deliveries);
  }

  /**
   * Moves parked jobs towards the pools that have room; returns how many it took. A pool nobody
   * waits for gets its room split between its parked flows by weight (fairSplit); a busy pool's
   * parked flows are topped up in its fair line, which decides the order. A suspended tenant's
   * flows, and flows whose kind a limit holds right now, are left parked.
   */
  async refillOnce(): Promise<number> {
    if (this.backlogged.size === 0) return 0;
    const pools = [...this.backlogged.keys()];
    const nowMs = this.o.clock.now().getTime();
    const rooms = await this.o.room.rooms(pools, nowMs);
    let moved = 0;
    this.turn++;
    for (const pool of pools) {
      const flows = this.backlogged.get(pool);
      if (!flows || flows.size === 0) {
        this.backlogged.delete(pool);
        continue;
      }
      const busy = this.lines.has(pool);
      const budget = busy ? this.lines.free : Math.min(rooms.get(pool)?.room ?? 0, this.o.maxRefill);
      const wants = fairSplit(budget, this.claims(pool, flows, busy, nowMs));
      const items = await this.o.backlog.take(pool, wants);
      const got = new Map<string, number>();
      for (const i of items) got.set(flowKey(i), (got.get(flowKey(i)) ?? 0) + 1);
      for (const [key, want] of wants) {
        const n = got.get(key) ?? 0;
        if (n < want && !this.parkingFlows.has(`${pool}|${key}`)) flows.delete(key); // drained (observe() re-checks)
        else flows.set(key, Math.max(0, (flows.get(key) ?? 0) - n));
      }
      if (flows.size === 0) this.backlogged.delete(pool);
      await this.lines.add(pool, items.map((i) => ({ id: i.id, dueMs: i.runAt.getTime(), tenantId: i.tenantId, kind: i.kind })));
      moved += items.length;
    }
    return moved;
  }

  /**
   * What each parked flow may be given: a tenant's weight shared between its flows in the pool;
   * at most what it has parked (an idle pool) or a refill's worth less what it has waiting (a busy
   * one); nothing for a suspended tenant or a kind its limit holds. In rotating order, so when
   * there is less room than flows each flow gets its turn to go first.
   */
  private claims(pool: string, flows: Map<string, number>, busy: boolean, nowMs: number): ShareClaim[] {
    const perTenant = new Map<number, number>();
    for (const key of flows.keys()) perTenant.set(flowOf(key).tenantId, (perTenant.get(flowOf(key).tenantId) ?? 0) + 1);
    const claims: ShareClaim[] = [];
    const keys = [...flows.keys()];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[(i + this.turn) % keys.length];
      const flow = flowOf(key);
      const share = this.o.shares.of(flow.tenantId);
      const open = !share.held && this.o.gate.open({ id: '', ...flow }, nowMs);
      const cap = !open ? 0 : busy ? Math.max(0, this.o.maxRefill - this.lines.sizeOf(pool, flow.tenantId, flow.kind)) : Math.max(1, flows.get(key) ?? 0);
      claims.push({ key, weight: share.weight / (perTenant.get(flow.tenantId) ?? 1), cap });
    }
    return claims;
  }

  /** Counts jobs parked in `pool`, one entry per job (observe() replaces the counts with the table's). */
  private markParked(pool: string, items: Iterable<{ tenantId: number; kind: string }>): void {
    let parked = this.backlogged.get(pool);
    if (!parked) this.backlogged.set(pool, (parked = new Map<string, number>()));
    for (const i of items) parked.set(flowKey(i), (parked.get(flowKey(i)) ?? 0) + 1);
  }

  /**
   * Refreshes what the dispatcher knows beyond its own batches: kind → pool as the workers
   * registered it, tenants' weights and limits, which tenants have parked jobs in which pools
   * (parked by any replica), and the per-pool gauges.
   */
  async observe(): Promise<void> {
    const { roster, routes, metrics, catalog, shares } = this.o;
    const nowMs = this.o.clock.now().getTime();
    await catalog.refresh(nowMs).catch((err: unknown) => this.o.logger.warn({ err }, 'could not read the kind registry; routing by the last copy'));
    routes.setDeclared(new Map(catalog.all().map((k) => [k.kind, k.pool])));
    await shares.refresh().catch((err: unknown) => this.o.logger.warn({ err }, "could not read tenants' weights and limits; using the last copy"));
    const counts = await this.o.backlog.counts();
    const pools = [...new Set([...routes.configuredPools(), ...(await roster.pools()), ...counts.keys()])].sort();
    const rooms = await this.o.room.rooms(pools, nowMs, true);
    for (const pool of pools) {
      const r = rooms.get(pool);
      const byFlow = counts.get(pool);
      let backlog = 0;
      if (byFlow) {
        let parked = this.backlogged.get(pool);
        if (!parked) this.backlogged.set(pool, (parked = new Map<string, number>()));
        for (const [key, n] of byFlow) {
          backlog += n;
          parked.set(key, n);
        }
      }
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

  /** Tenants' weights and limits as last read (the hot consumer orders its batches by them). */
  get shares(): TenantShares {
    return this.o.shares;
  }

  /** Deliveries waiting for room, over all pools (tests, tools). */
  get waitingCount(): number {
    return this.lines.size;
  }

  /** Pools known to have parked jobs (tests, tools). */
  get backloggedPools(): string[] {
    return [...this.backlogged.keys()].sort();
  }
}

function backlogItem(d: HotDelivery, pool: string): BacklogItem {
  return { id: d.id, pool, runAt: new Date(d.dueMs), tenantId: d.tenantId, kind: d.kind };
}
