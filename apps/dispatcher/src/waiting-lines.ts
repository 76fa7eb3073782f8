import type { DeliveryMetrics, ReadyLists } from '@almanac/delivery';
import type { BacklogRepository } from '@almanac/persistence';
import type { Clock } from '@almanac/platform';
import type { PoolRoom } from './pool-room';

/** What a waiting delivery became: in its pool's ready list, or parked in the backlog. */
export type LineOutcome = 'handed_off' | 'parked';

/** The part of a hot delivery a line needs. */
export interface LineItem {
  id: string;
  dueMs: number;
}

interface Waiter {
  item: LineItem;
  /** When it joined the line, by the dispatcher's clock (epoch ms). */
  since: number;
  resolve: (outcome: LineOutcome) => void;
  reject: (err: unknown) => void;
}

export interface WaitingLinesOptions {
  room: PoolRoom;
  ready: ReadyLists;
  backlog: BacklogRepository;
  metrics: DeliveryMetrics;
  clock: Clock;
  /** A line whose pool frees no room for this long (its workers died or hang) is parked. */
  stallMs: number;
  /** Deliveries that may wait at once, over all pools (memory); the rest park. */
  maxWaiting: number;
  /**
   * A delivery waiting this long parks, however steadily its pool drains: it must be in the
   * backlog (which the overdue sweep skips) before the overdue grace makes the sweep enqueue a
   * second copy of its row.
   */
  maxWaitMs: number;
  /** Called after a line parked jobs of `pool`, so new jobs park behind them (due order). */
  onParked: (pool: string) => void;
}

/** How often a pool's room is re-read while its line waits. */
const ROOM_POLL_MS = 2;

/**
 * Deliveries for a live but busy pool wait here for room: one FIFO line and one pump per pool.
 * The pump reads the pool's room (every ROOM_POLL_MS while it has none) and hands the head of
 * the line over as room frees, one RPUSH per hand-off. A burst of any size costs one evaluation
 * per job: the earlier design re-dispatched every waiting job each time room freed (35,000
 * re-evaluations for a 20,000-job burst). Waiting holds nothing durable: the hot-queue job that
 * carried a waiting delivery stays active in BullMQ until its deliveries are handed off or parked.
 */
export class WaitingLines {
  private readonly lines = new Map<string, Waiter[]>();
  private waiting = 0;
  private closing = false;

  constructor(private readonly o: WaitingLinesOptions) {}

  /** Deliveries waiting now, over all pools. */
  get size(): number {
    return this.waiting;
  }

  /** Whether a line for `pool` is waiting: new jobs for it join the line rather than overtake it. */
  has(pool: string): boolean {
    return this.lines.has(pool);
  }

  /** How many more deliveries may wait now (the rest park). */
  get free(): number {
    return Math.max(0, this.o.maxWaiting - this.waiting);
  }

  /**
   * Shutdown: every line parks what it holds at its next turn (and new waiters park at once), so
   * the hot consumer's active jobs finish within milliseconds instead of when their pools drain.
   */
  close(): void {
    this.closing = true;
  }

  /** Resolves, per item, once it is handed off or parked; rejects if Redis or Postgres failed it. */
  wait(pool: string, items: readonly LineItem[]): Promise<LineOutcome[]> {
    let line = this.lines.get(pool);
    const idle = !line;
    if (!line) this.lines.set(pool, (line = []));
    const queued = line;
    const since = this.o.clock.now().getTime();
    const outcomes = items.map((item) => new Promise<LineOutcome>((resolve, reject) => queued.push({ item, since, resolve, reject })));
    this.waiting += items.length;
    if (idle) void this.pump(pool, queued);
    return Promise.all(outcomes);
  }

  private async pump(pool: string, line: Waiter[]): Promise<void> {
    let progressAt = Date.now();
    try {
      while (line.length > 0) {
        const now = this.o.clock.now().getTime();
        const old = countWaitingSince(line, now - this.o.maxWaitMs);
        if (old > 0) {
          await this.settle(line.splice(0, old), 'parked', (items) => this.park(pool, items));
          continue;
        }
        const view = this.closing ? undefined : (await this.o.room.rooms([pool], now)).get(pool);
        if (!view || view.status.capacity === 0 || Date.now() - progressAt > this.o.stallMs) {
          await this.settle(line.splice(0), 'parked', (items) => this.park(pool, items));
        } else if (view.room > 0) {
          await this.settle(line.splice(0, view.room), 'handed_off', (items) => this.handOff(pool, items));
          progressAt = Date.now();
        } else {
          await new Promise((r) => setTimeout(r, ROOM_POLL_MS));
        }
      }
    } catch (err) {
      // Redis or Postgres failed: every waiter's hot job fails, and the sweeps re-deliver the rows.
      this.fail(line.splice(0), err);
    } finally {
      this.lines.delete(pool);
    }
  }

  private async settle(waiters: Waiter[], outcome: LineOutcome, act: (items: LineItem[]) => Promise<void>): Promise<void> {
    try {
      await act(waiters.map((w) => w.item));
    } catch (err) {
      this.fail(waiters, err);
      throw err;
    }
    this.waiting -= waiters.length;
    for (const w of waiters) w.resolve(outcome);
  }

  private fail(waiters: Waiter[], err: unknown): void {
    this.waiting -= waiters.length;
    for (const w of waiters) w.reject(err);
  }

  private async handOff(pool: string, items: LineItem[]): Promise<void> {
    await this.o.ready.push(pool, items.map((i) => ({ id: i.id, dueMs: i.dueMs })));
    this.o.metrics.dispatched.inc({ pool, via: 'direct' }, items.length);
  }

  private async park(pool: string, items: LineItem[]): Promise<void> {
    await this.o.backlog.park(items.map((i) => ({ id: i.id, pool, runAt: new Date(i.dueMs) })));
    this.o.onParked(pool);
  }
}

/** How many waiters at the head of a line joined before `cutoff` (a line is in joining order). */
function countWaitingSince(line: readonly Waiter[], cutoff: number): number {
  let n = 0;
  while (n < line.length && line[n].since < cutoff) n++;
  return n;
}
