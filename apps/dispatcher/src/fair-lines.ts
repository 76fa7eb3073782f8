import { type DeliveryMetrics, lightLaneSlots, type ReadyItem, type ReadyLists } from '@almanac/delivery';
import { type FairEntry, FairQueue } from '@almanac/domain';
import type { BacklogRepository } from '@almanac/persistence';
import { type Clock, within } from '@almanac/platform';
import type { LimitGate } from './limit-gate';
import type { PoolRoom } from './pool-room';
import type { TenantShares } from './tenant-shares';

/** What a waiting delivery became: in its pool's ready list, or parked in the backlog. */
export type LineOutcome = 'handed_off' | 'parked';

/** The part of a hot delivery (or a refilled backlog row) a line needs. */
export interface LineItem {
  id: string;
  dueMs: number;
  tenantId: number;
  kind: string;
}

interface Waiter {
  item: LineItem;
  tenantId: number;
  kind: string;
  /** When it joined the line, by the dispatcher's clock (epoch ms). */
  since: number;
  /** Came from the backlog (nobody awaits it) rather than from a hot job. */
  refilled: boolean;
  resolve?: (outcome: LineOutcome) => void;
  reject?: (err: unknown) => void;
  /** Settled (handed off, parked or failed): counted out of `waiting` once, whatever fails later. */
  done?: boolean;
  /** Out of its line and being parked: the parking settles it, nothing else. */
  aside?: boolean;
}

export interface FairLinesOptions {
  room: PoolRoom;
  ready: ReadyLists;
  backlog: BacklogRepository;
  metrics: DeliveryMetrics;
  clock: Clock;
  shares: TenantShares;
  gate: LimitGate;
  /** A line whose pool frees no room for this long (its workers died or hang) is parked. */
  stallMs: number;
  /** Deliveries that may wait at once, over all pools (memory); beyond it the largest tenant parks. */
  maxWaiting: number;
  /**
   * A delivery waiting this long parks, however steadily its pool drains: it must be in the
   * backlog (which the overdue sweep skips) before the overdue grace makes the sweep enqueue a
   * second copy of its row.
   */
  maxWaitMs: number;
  /** Called as a line parks jobs in `pool` (before the INSERT lands), so their flows' new jobs park behind them. */
  onParked: (pool: string, items: readonly { tenantId: number; kind: string }[]) => void;
}

/** How often a pool's room is re-read while its line waits. */
const ROOM_POLL_MS = 2;
/** Every Redis call of a pump turn answers within this, or the turn fails (its waiters with it). */
const REDIS_WAIT_MS = 5000;
/**
 * At most this many are parked to make memory per turn: a turn that parked 150,000 rows in one
 * INSERT held a light tenant's job behind it for ~7 s (bench/fairness.ts).
 */
const MAX_EVICT_PER_TURN = 2000;
/** Rows per parking INSERT: a stalled line's 13,000 rows in one took 1.3 s on a loaded machine. */
const MAX_PARK_ROWS = 2000;

class PoolLine {
  readonly queue = new FairQueue<Waiter>();
  pumping: Promise<void> | undefined;
  progressAt = Date.now();
  /**
   * The line's parking, one INSERT at a time, beside the pump: a turn that awaited its parking
   * held the hand-off behind it (a light tenant's job waited 880 ms behind a stalled line's
   * 13,000-row INSERT in bench/fairness.ts).
   */
  parking: Promise<void> = Promise.resolve();
  /** A light tenant's job joined since the last light-lane look (else that look would scan every flow each poll). */
  lightJoined = false;
}

/**
 * Deliveries for a live but busy pool wait here for room: per pool one fair queue (FairQueue:
 * tenants share the pool by weight, and a light tenant's job goes next however long a heavy
 * tenant's line) and one pump. The pump reads the pool's room (every ROOM_POLL_MS while it has
 * none), takes that many in fair order, checks limited tenants' limits (LimitGate), and hands
 * them over in one round trip: light tenants' jobs to the pool's light lane (worker slots of
 * their own, taken even when the pool has no room), or to the head of the ready list when the
 * lane is full (the hand-off buffer holds up to a pool's capacity of heavy tenants' jobs), the
 * rest at its tail. Waiting holds nothing durable: a hot job stays active in BullMQ until its deliveries
 * are handed off or parked, and a refilled row is still queued in Postgres.
 */
export class FairLines {
  private readonly lines = new Map<string, PoolLine>();
  private waiting = 0;
  /** Of `waiting`, the rows out of their lines and being parked (memory the parking frees soon). */
  private parking = 0;
  /** Every line's parking not yet done, so a shutdown can wait for it (see settled()). */
  private readonly parkings = new Set<Promise<void>>();
  private closing = false;

  constructor(private readonly o: FairLinesOptions) {}

  /** Deliveries waiting now, over all pools. */
  get size(): number {
    return this.waiting;
  }

  /** How many more deliveries may wait now before the largest tenant's newest are parked. */
  get free(): number {
    return Math.max(0, this.o.maxWaiting - this.waiting);
  }

  /** Whether `pool` has deliveries waiting: new ones join its line rather than overtake it. */
  has(pool: string): boolean {
    return (this.lines.get(pool)?.queue.size ?? 0) > 0;
  }

  /** Deliveries of one tenant (of one kind, if given) waiting for `pool`. */
  sizeOf(pool: string, tenantId: number, kind?: string): number {
    return this.lines.get(pool)?.queue.sizeOf(tenantId, kind) ?? 0;
  }

  /**
   * Whether a job of this tenant joining `pool`'s line now would be light: the line is waiting
   * (the pool is full) and the tenant has nothing in it and owes nothing (see isLight).
   */
  wouldBeLight(pool: string, tenantId: number): boolean {
    const line = this.lines.get(pool);
    return line !== undefined && line.queue.size > 0 && line.queue.isSparse(tenantId);
  }

  /** How many the tenant with the most waiting for `pool` has (who parks when memory is short). */
  largestSize(pool: string): number {
    return this.lines.get(pool)?.queue.largestSize() ?? 0;
  }

  /** Shutdown: every line parks what it holds at its next turn, and new waiters park at once. */
  close(): void {
    this.closing = true;
  }

  /**
   * Resolves once every pump has stopped and every parking INSERT begun is done (shutdown, after
   * close()): refilled rows being parked again have no hot job to keep the process up for them,
   * and an exit before their INSERT left them to the overdue sweep (found in review).
   */
  async settled(): Promise<void> {
    for (;;) {
      const pending = [...[...this.lines.values()].map((l) => l.pumping), ...this.parkings].filter((p) => p !== undefined);
      if (pending.length === 0) return;
      await Promise.allSettled(pending);
    }
  }

  /** Resolves, per item, once it is handed off or parked; rejects if Redis or Postgres failed it. */
  wait(pool: string, items: readonly LineItem[]): Promise<LineOutcome[]> {
    const line = this.line(pool);
    const since = this.o.clock.now().getTime();
    const outcomes = items.map(
      (item) => new Promise<LineOutcome>((resolve, reject) => this.join(line, { item, tenantId: item.tenantId, kind: item.kind, since, refilled: false, resolve, reject })),
    );
    void this.start(pool, line);
    return Promise.all(outcomes);
  }

  /** Rows refilled from the backlog join the line; resolves after the pump's first turn. */
  add(pool: string, items: readonly LineItem[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    const line = this.line(pool);
    const since = this.o.clock.now().getTime();
    for (const item of items) this.join(line, { item, tenantId: item.tenantId, kind: item.kind, since, refilled: true });
    return this.start(pool, line);
  }

  private line(pool: string): PoolLine {
    let line = this.lines.get(pool);
    if (!line) this.lines.set(pool, (line = new PoolLine()));
    return line;
  }

  private join(line: PoolLine, w: Waiter): void {
    if (line.queue.push(w, this.o.shares.of(w.tenantId).weight).sparse) line.lightJoined = true;
    this.waiting++;
  }

  /** Starts the pool's pump unless it runs; resolves once its first turn is done. */
  private start(pool: string, line: PoolLine): Promise<void> {
    if (line.pumping) return Promise.resolve();
    let firstTurn!: () => void;
    const first = new Promise<void>((resolve) => (firstTurn = resolve));
    line.pumping = this.pump(pool, line, firstTurn).finally(() => {
      line.pumping = undefined;
      if (line.queue.size === 0 && this.lines.get(pool) === line) this.lines.delete(pool);
      else if (line.queue.size > 0) void this.start(pool, line); // joined as the pump ended
    });
    return first;
  }

  private async pump(pool: string, line: PoolLine, firstTurn: () => void): Promise<void> {
    try {
      while (line.queue.size > 0) {
        const moved = await this.turn(pool, line);
        firstTurn();
        if (moved === 0 && line.queue.size > 0) await new Promise((r) => setTimeout(r, ROOM_POLL_MS));
      }
    } catch (err) {
      // Redis or Postgres failed: every waiter's hot job fails and the sweeps re-deliver the rows
      // (refilled rows are queued, not parked: the overdue sweep's net).
      this.fail(line.queue.drain(), err);
    } finally {
      firstTurn();
    }
  }

  /** One turn of a pool's pump: park what waited too long or does not fit in memory, then hand over what the room allows. */
  private async turn(pool: string, line: PoolLine): Promise<number> {
    const now = this.o.clock.now().getTime();
    const old = line.queue.removeOld((w) => w.since < now - this.o.maxWaitMs);
    this.parkAside(pool, line, old);
    const over = this.waiting - this.parking - this.o.maxWaiting;
    if (over > 0) this.parkAside(pool, line, line.queue.evictFromLargest(Math.min(over, MAX_EVICT_PER_TURN)));
    if (line.queue.size === 0) return 1;
    const view = this.closing ? undefined : (await within(REDIS_WAIT_MS, this.o.room.rooms([pool], now), 'pool room')).get(pool);
    if (!view || view.status.capacity === 0 || (view.room === 0 && Date.now() - line.progressAt > this.o.stallMs)) {
      this.parkAside(pool, line, line.queue.drain());
      return 1;
    }
    const gate = this.o.gate;
    const admit = (w: Waiter) => !this.o.shares.of(w.tenantId).held && gate.open(w.item, now);
    if (view.room === 0) {
      // The pool's light lane (LIGHT_LANE_SHARE): slots of their own in every worker, so a light
      // tenant's job need not wait for the pool's main slots to turn over.
      const lightRoom = lightLaneSlots(view.status.capacity) - view.light;
      if (lightRoom <= 0 || !line.lightJoined) return 0;
      line.lightJoined = false;
      const light = line.queue.take(lightRoom, (w, e) => isLight(line, w, e) && admit(w));
      return light.length > 0 ? this.handOffOrFail(pool, line, light, now, lightRoom) : 0;
    }
    line.progressAt = Date.now();
    return this.handOffOrFail(pool, line, line.queue.take(view.room, admit), now, 0); // room: the head will do
  }

  private async handOffOrFail(pool: string, line: PoolLine, taken: FairEntry<Waiter>[], now: number, lightRoom: number): Promise<number> {
    try {
      return await this.handOff(pool, line, taken, now, lightRoom);
    } catch (err) {
      // Out of the queue: the pump's catch would not see them. Those a limit refused are being
      // parked, and their parking settles them.
      this.fail(taken.map((e) => e.item).filter((w) => !w.aside), err);
      throw err;
    }
  }

  /**
   * Takes the limited items' slots and hands over what may go, light tenants' at the head. What a
   * limit refuses: a hot delivery parks at once (its hot job must not hold a consumer slot while
   * the limit lasts), a refilled row goes back to its place in the line.
   */
  private async handOff(pool: string, line: PoolLine, taken: FairEntry<Waiter>[], now: number, lightRoom: number): Promise<number> {
    const gate = this.o.gate;
    const limited = taken.filter((e) => gate.limited(e.item.item));
    const { granted, refused } = await within(REDIS_WAIT_MS, gate.acquire(limited.map((e) => e.item.item), now), 'limit slots');
    const no = new Set(refused);
    const handed = no.size > 0 ? taken.filter((e) => !no.has(e.item.item)) : taken;
    if (no.size > 0) {
      const back = taken.filter((e) => no.has(e.item.item));
      line.queue.unshift(back.filter((e) => e.item.refilled));
      this.parkAside(pool, line, back.filter((e) => !e.item.refilled).map((e) => e.item));
    }
    const ready = (e: FairEntry<Waiter>): ReadyItem => ({ id: e.item.item.id, dueMs: e.item.item.dueMs, slots: granted.get(e.item.item) });
    // At the head: light tenants' jobs, and jobs holding a concurrency slot, which would otherwise
    // spend their slot waiting behind a pool's worth of other jobs (a tenant capped at 50 ran
    // 10-20 at once beside a burst in bench/fairness.ts). Both are bounded: by share, by the cap.
    // With the pool full, light tenants' jobs go to its light lane (lightRoom > 0); else to the head.
    const light = new Set(handed.filter((e) => e.sparse).slice(0, Math.max(0, lightRoom)));
    const first = (e: FairEntry<Waiter>): boolean => !light.has(e) && (e.sparse || granted.get(e.item.item) !== undefined);
    const rest = (e: FairEntry<Waiter>): boolean => !light.has(e) && !first(e);
    await this.settle(handed.map((e) => e.item), 'handed_off', async () => {
      const push = this.o.ready.push(pool, handed.filter(rest).map(ready), handed.filter(first).map(ready), [...light].map(ready));
      await within(REDIS_WAIT_MS, push, 'hand-off');
      const refilled = handed.filter((e) => e.item.refilled).length;
      if (handed.length > refilled) this.o.metrics.dispatched.inc({ pool, via: 'direct' }, handed.length - refilled);
      if (refilled > 0) this.o.metrics.dispatched.inc({ pool, via: 'backlog' }, refilled);
    });
    return handed.length;
  }

  /**
   * Parks waiters already out of the line, after the line's earlier parking and in INSERTs of at
   * most MAX_PARK_ROWS, without holding up the pump. A failed INSERT fails its waiters (their
   * hot jobs fail and the sweeps re-deliver the rows) and the next chunk is still tried.
   */
  private parkAside(pool: string, line: PoolLine, waiters: Waiter[]): void {
    if (waiters.length === 0) return;
    for (const w of waiters) w.aside = true;
    this.parking += waiters.length;
    // Counted as parked now, not after the INSERT: their flows' newer rows park behind them
    // rather than being handed off first.
    this.o.onParked(pool, waiters);
    const parking = line.parking.then(async () => {
      for (let i = 0; i < waiters.length; i += MAX_PARK_ROWS) {
        const chunk = waiters.slice(i, i + MAX_PARK_ROWS);
        await this.settle(chunk, 'parked', (ws) => this.park(pool, ws)).catch(() => undefined); // failed: settle rejected them
        this.parking -= chunk.length;
      }
    });
    line.parking = parking;
    this.parkings.add(parking);
    void parking.finally(() => this.parkings.delete(parking));
  }

  private async settle(waiters: Waiter[], outcome: LineOutcome, act: (ws: Waiter[]) => Promise<void>): Promise<void> {
    if (waiters.length === 0) return;
    try {
      await act(waiters);
    } catch (err) {
      this.fail(waiters, err);
      throw err;
    }
    for (const w of waiters) {
      if (w.done) continue;
      w.done = true;
      this.waiting--;
      w.resolve?.(outcome);
    }
  }

  /** Fails waiters not settled yet: their hot jobs fail, and the sweeps re-deliver the rows. */
  private fail(waiters: Waiter[], err: unknown): void {
    for (const w of waiters) {
      if (w.done) continue;
      w.done = true;
      this.waiting--;
      w.reject?.(err);
    }
  }

  private async park(pool: string, waiters: Waiter[]): Promise<void> {
    await this.o.backlog.park(waiters.map((w) => ({ id: w.item.id, pool, runAt: new Date(w.item.dueMs), tenantId: w.tenantId, kind: w.kind })));
  }
}

/**
 * A light tenant's job: it arrived to an empty flow owing nothing (sparse) and is still its
 * tenant's only job waiting (a burst's first waiting job is sparse too, but not alone).
 */
function isLight(line: PoolLine, w: Waiter, e: FairEntry<Waiter>): boolean {
  return e.sparse && line.queue.sizeOf(w.tenantId) === 1;
}
