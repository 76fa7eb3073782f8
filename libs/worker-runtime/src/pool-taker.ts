import { type HeldSlots, LimitSlots, lightLaneSlots, type ReadyItem, type ReadyLists, RENEW_EVERY_MS } from '@almanac/delivery';
import { duplicateRedis, type RedisClient, within } from '@almanac/platform';
import type { Logger } from 'pino';
import type { Executor } from './executor';

export interface PoolTakerOptions {
  /** Used to open one blocking connection per pool (a blocked BLMPOP holds its connection). */
  connection: RedisClient;
  ready: ReadyLists;
  pools: readonly string[];
  /** Handlers running at once, per pool. */
  concurrency: number;
  executor: Executor;
  logger: Logger;
  /** Where limited tenants' slots are released (default: on the ready lists' Redis and prefix). */
  slots?: LimitSlots;
}

/** How long one blocking take waits before the loop looks at its flags again. */
const BLOCK_SECONDS = 1;

/** One list a pool's work comes from, with its own handler slots: the main list, or the light lane. */
interface Lane {
  pool: string;
  light: boolean;
  concurrency: number;
  running: number;
  /** Wakes the lane's loop when one of its slots frees. */
  slotFreed?: () => void;
}

/**
 * Takes work from the pools' ready lists exactly as fast as handler slots free up: per pool and
 * lane (its ready list, and its light lane's with `lightLaneSlots(concurrency)` slots of its
 * own), one loop asks for as many items as it has free slots (one BLMPOP), starts them, and waits
 * for a slot when full. Nothing is taken that could not start now, so nothing sits in this
 * process unclaimed for long; a crash loses at most the items between the take and the claim,
 * whose rows are still queued and are found by the overdue sweep.
 */
export class PoolTaker {
  private readonly lanes: Lane[] = [];
  private readonly blocking: RedisClient[] = [];
  private readonly loops: Promise<void>[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing = false;
  /** Limit slots held by runs in this process (limited tenants' jobs), renewed until the run ends. */
  private readonly held = new Map<string, HeldSlots>();
  private toRelease: HeldSlots[] = [];
  private releasing: Promise<void> | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly slots: LimitSlots;

  constructor(private readonly o: PoolTakerOptions) {
    for (const pool of o.pools) {
      this.lanes.push({ pool, light: false, concurrency: o.concurrency, running: 0 });
      this.lanes.push({ pool, light: true, concurrency: lightLaneSlots(o.concurrency), running: 0 });
    }
    this.slots = o.slots ?? new LimitSlots(o.ready.redis, o.ready.prefix);
  }

  /** Handlers running now in `pool`, both lanes (the heartbeat reports it). */
  runningIn(pool: string): number {
    return this.lanes.reduce((n, l) => (l.pool === pool ? n + l.running : n), 0);
  }

  start(): void {
    if (this.loops.length > 0 || this.closing) return;
    for (const lane of this.lanes) {
      const conn = duplicateRedis(this.o.connection, { enableAutoPipelining: false });
      conn.on('error', () => undefined); // the shared connection's owner reports outages
      this.blocking.push(conn);
      this.loops.push(this.loop(lane, conn));
    }
    this.renewTimer = setInterval(() => void this.renewSlots(), RENEW_EVERY_MS);
    this.renewTimer.unref();
  }

  /** Keeps the limit slots of runs still going from expiring (a long handler); a failure is retried next time. */
  async renewSlots(): Promise<void> {
    if (this.held.size === 0) return;
    await within(2000, this.slots.renew([...this.held.values()]), 'renew limit slots').catch((err: unknown) =>
      this.o.logger.warn({ err }, 'could not renew limit slots; they expire unless renewed next time'),
    );
  }

  /**
   * Takes and runs what the ready lists hold now, without blocking, and returns how many it
   * started. For tests and tools: no timers.
   */
  async runOnce(max = 10_000): Promise<number> {
    const started: Promise<unknown>[] = [];
    for (const lane of [...this.lanes].sort((a, b) => Number(b.light) - Number(a.light))) {
      for (const item of await this.o.ready.take(lane.pool, max - started.length, lane.light)) started.push(this.startOne(lane, item));
    }
    await Promise.all(started);
    await this.o.executor.drain(); // outcomes recorded before the caller looks
    await this.releasing;
    return started.length;
  }

  /**
   * Graceful stop: take nothing new; running handlers get until `deadlineMs`; whatever is still
   * running then is released back to `queued` and re-enqueued at once.
   */
  async close(deadlineMs: number): Promise<{ released: number }> {
    this.closing = true;
    clearInterval(this.renewTimer);
    this.o.executor.beginClose();
    for (const lane of this.lanes) lane.slotFreed?.();
    // Let a blocked BLMPOP end by itself (≤ BLOCK_SECONDS): disconnecting under it could drop a
    // reply whose items Redis already popped. Items it returns now are handed back by the loop.
    // Bounded, for a Redis that does not answer at all.
    await within((BLOCK_SECONDS + 1) * 1000, Promise.allSettled(this.loops), 'ready-list take').catch(() => undefined);
    for (const conn of this.blocking) conn.disconnect();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
    });
    let first: 'finished' | 'deadline';
    try {
      first = await Promise.race([Promise.allSettled([...this.inFlight]).then(() => 'finished' as const), deadline]);
    } finally {
      clearTimeout(timer); // the timer must not hold the process
    }
    const released = first === 'deadline' ? await this.o.executor.releaseUnfinished() : 0;
    await this.o.executor.drain();
    await this.releasing;
    return { released };
  }

  private async loop(lane: Lane, conn: RedisClient): Promise<void> {
    const { pool, light } = lane;
    while (!this.closing) {
      const free = lane.concurrency - lane.running;
      if (free <= 0) {
        await new Promise<void>((resolve) => (lane.slotFreed = resolve));
        // Handlers finishing in the same turn free their slots together: take for all of them
        // in one command (and claim them in one statement) instead of one by one. Taking per
        // freed slot measured batches of 1-3 and ~20% of the worker's CPU in socket writes.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      let items: ReadyItem[] = [];
      try {
        items = await this.o.ready.takeBlocking(conn, pool, free, BLOCK_SECONDS, light);
      } catch (err) {
        if (this.closing) break;
        this.o.logger.error({ err, pool }, 'could not take from the ready list; retrying');
        await new Promise((r) => setTimeout(r, 1000));
      }
      if (this.closing) {
        // Taken while closing (a reply raced the disconnect): not started, so handed back.
        if (items.length > 0) await within(2000, this.o.ready.giveBack(pool, items, light), 'give back').catch(() => undefined);
        break;
      }
      for (const item of items) void this.startOne(lane, item);
    }
  }

  private startOne(lane: Lane, item: ReadyItem): Promise<unknown> {
    const { pool } = lane;
    lane.running++;
    if (item.slots) this.held.set(item.id, { id: item.id, ...item.slots });
    let givenBack = false;
    const run = this.o.executor
      .execute({ id: item.id, dueMs: item.dueMs, pool, slots: item.slots })
      .then((result) => (givenBack = result === 'given_back'))
      .catch((err: unknown) => this.o.logger.error({ err, pool, jobId: item.id }, 'delivery failed; the row is rescued by its lease or the overdue sweep'))
      .finally(() => {
        if (givenBack) this.held.delete(item.id); // back in the ready list, slots and all
        else this.releaseSlots(item.id);
        lane.running--;
        this.inFlight.delete(run);
        const wake = lane.slotFreed;
        lane.slotFreed = undefined;
        wake?.();
      });
    this.inFlight.add(run);
    return run;
  }

  /**
   * The run is over (recorded, retried, dropped or failed): its tenant's slots go back, batched
   * with the others ending in the same turn. A release that fails is left to the slot's expiry.
   */
  private releaseSlots(id: string): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    this.toRelease.push(h);
    if (this.toRelease.length > 1) return;
    this.releasing = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const batch = this.toRelease;
      this.toRelease = [];
      await within(2000, this.slots.release(batch), 'release limit slots').catch((err: unknown) =>
        this.o.logger.warn({ err, n: batch.length }, 'could not release limit slots; they expire by themselves'),
      );
    });
  }
}
