import { ReadyQueues, type TakenHint } from '@almanac/delivery';
import { duplicateRedis, type RedisClient, SLOT_RENEW_MS, TAKE_BLOCK_MS, WaitTimeoutError, within, WORKER_REDIS_WAIT_MS } from '@almanac/platform';
import type { ExecutionResult, Executor, ExecutorOptions } from './executor';
import { type Lane, newLane, wake } from './pool-lane';

/** What the taker shares with its executor, and its own. */
export type PoolTakerOptions = Pick<ExecutorOptions, 'identity' | 'clock' | 'logger'> & {
  /** Duplicated per pool, for its blocking waits and for its takes. */
  connection: RedisClient;
  ready: ReadyQueues;
  pools: readonly string[];
  /** Handlers running at once, per pool. */
  concurrency: number;
  executor: Executor;
};

/**
 * Takes work from the pools' ready lists as handler slots free up: per pool, one loop takes as
 * many hints as it has free slots, starts them, and when the pool has nothing for it, blocks until
 * a push, a finish, or a row comes due or a limit opens. A take also reports the hints done with:
 * at once when a run held limit slots, else with the next take (until then in the taken hash).
 */
export class PoolTaker {
  private readonly lanes: Lane[];
  private readonly loops: Promise<void>[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  private closing = false;
  private renewTimer: NodeJS.Timeout | undefined;
  /** FINISH calls in flight (finishAll): close() waits for them. */
  private readonly finishing = new Set<Promise<void>>();

  constructor(private readonly o: PoolTakerOptions) {
    this.lanes = o.pools.map(newLane);
  }

  /** Handlers running now in `pool` (the heartbeat reports it). */
  runningIn(pool: string): number {
    return this.lanes.find((l) => l.pool === pool)?.running ?? 0;
  }

  start(): void {
    if (this.loops.length > 0 || this.closing) return;
    for (const lane of this.lanes) {
      const [blocking, takes] = [{}, { autoResendUnfulfilledCommands: false as const }].map((o) => duplicateRedis(this.o.connection, { enableAutoPipelining: false, ...o }));
      for (const c of [blocking, takes]) c.on('error', () => undefined); // the shared connection's owner reports outages
      [lane.blocking, lane.takes] = [blocking, new ReadyQueues(takes, this.o.ready.prefix)];
      this.loops.push(this.loop(lane));
    }
    this.renewTimer = setInterval(() => void this.renewSlots(), SLOT_RENEW_MS).unref();
  }

  /** Takes and runs what the pools hold now, without blocking; returns how many it started. Tests and tools: no timers. */
  async runOnce(max = 10_000): Promise<number> {
    const started: Promise<unknown>[] = [];
    for (const lane of this.lanes) {
      const take = await this.o.ready.take(lane.pool, max - started.length, this.o.clock.now().getTime(), String(this.o.identity.id));
      started.push(...take.hints.flatMap((h) => this.startOne(lane, h, this.o.identity.id) ?? []));
    }
    await Promise.all(started);
    await this.o.executor.drain(); // outcomes recorded before the caller looks
    await this.finishAll();
    await this.handTimerOn(); // no timer here to keep
    return started.length;
  }

  /** A take of nothing hands the pool's timer on if this worker keeps it (take.lua): it stops, or runs once. */
  private handTimerOn(): Promise<unknown> {
    return Promise.allSettled(this.lanes.map((l) => within(WORKER_REDIS_WAIT_MS, this.o.ready.take(l.pool, 0, this.o.clock.now().getTime(), String(this.o.identity.id)), 'hand the timer on')));
  }

  /** Graceful stop: take nothing new; what still runs at `deadlineMs` is released to `queued` and its hint given back. */
  async close(deadlineMs: number): Promise<{ released: number }> {
    this.closing = true;
    clearInterval(this.renewTimer);
    for (const lane of this.lanes) for (const wake of [lane.slotFreed, lane.wakeToFinish]) wake?.();
    // A BLPOP ends by itself (≤ TAKE_BLOCK_MS), a take soon after; disconnecting under either could drop a wake token or a reply.
    await within(TAKE_BLOCK_MS + WORKER_REDIS_WAIT_MS, Promise.allSettled([...this.loops, ...this.lanes.flatMap((l) => l.waiter ?? [])]), 'ready take').catch(() => undefined);
    if (this.loops.length > 0) await this.handTimerOn(); // after our own BLPOPs ended: the token it leaves wakes another worker
    for (const lane of this.lanes) if (lane.lostTake) await this.giveBackLost(lane, this.o.identity.id); // no rescue follows a worker that leaves
    for (const lane of this.lanes) for (const c of [lane.blocking, lane.takes?.redis]) c?.disconnect();
    this.o.executor.writer.retryUntilMs = this.o.clock.now().getTime() + deadlineMs; // failed outcome writes are retried while handlers may still finish
    const finished = await within(deadlineMs, Promise.allSettled([...this.inFlight]), 'handlers').then(() => true, () => false);
    const released = finished ? 0 : [...(await this.o.executor.releaseUnfinished()).values()].reduce((n, ids) => n + ids.length, 0);
    await Promise.allSettled([...this.inFlight]);
    await this.o.executor.drain();
    await Promise.allSettled([...this.finishing, this.finishAll()]);
    return { released };
  }

  private async loop(lane: Lane): Promise<void> {
    while (!this.closing) {
      const free = this.o.concurrency - lane.running;
      const takenBy = this.o.identity.id;
      if (lane.lostTake && !(await this.giveBackLost(lane, takenBy))) continue; // no take first: landing after one, the give-back would hand back what it took
      const done = lane.done.get(takenBy) ?? [];
      if (free <= 0 && !lane.doneHoldsSlots && !lane.woken) {
        await new Promise<void>((resolve) => (lane.slotFreed = resolve));
        // Handlers ending in the same turn free their slots together: one take (and claim) for all (one per slot: batches of 1-3, ~20% of the worker's CPU in socket writes).
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      lane.done.delete(takenBy);
      const doneHoldsSlots = lane.doneHoldsSlots;
      lane.doneHoldsSlots = false;
      lane.woken = false; // a token taken before now announced work this take sees
      if (lane.done.size > 0) void this.finishAll(); // hints taken under an id this worker had before the rescue
      const via = lane.takes?.redis.status === 'ready' ? lane.takes : this.o.ready; // its own not up (cannot connect, reconnecting): the shared one
      let take;
      try {
        take = await within(WORKER_REDIS_WAIT_MS, via.take(lane.pool, Math.max(0, free), this.o.clock.now().getTime(), String(takenBy), done), 'ready take');
      } catch (err) {
        // A socket gone quiet (its Redis host lost) answers nothing until TCP gives up: connect again (on one server, the take not resent).
        if (via === lane.takes && err instanceof WaitTimeoutError) for (const c of [lane.blocking, lane.takes.redis]) c?.disconnect(true);
        lane.done.set(takenBy, [...done, ...(lane.done.get(takenBy) ?? [])]); // sent again with the next take
        lane.doneHoldsSlots ||= doneHoldsSlots;
        lane.lostTake = true;
        if (this.closing) break;
        this.o.logger.error({ err, pool: lane.pool }, 'could not take from the pool; retrying');
        await new Promise((r) => setTimeout(r, TAKE_BLOCK_MS));
        continue;
      }
      for (const h of take.hints) void this.startOne(lane, h, takenBy);
      if (take.hints.length < free && !this.closing) await this.waitForWork(lane, take.nextWakeMs);
    }
  }

  /** Until a push or a finish signals the pool (its wake token), the next row's due time or a limit's opening, or a hint of this worker's that holds limit slots is done with. */
  private async waitForWork(lane: Lane, nextWakeMs: number | null): Promise<void> {
    if (lane.doneHoldsSlots || lane.woken) return;
    lane.waiter ??= this.o.ready.waitForWork(lane.blocking as RedisClient, lane.pool, TAKE_BLOCK_MS).catch(() => false).then((woke) => {
      lane.waiter = undefined;
      lane.woken ||= woke;
      if (woke) wake(lane, 'slotFreed'); // a full lane passes it on
      return woke;
    });
    const untilWake = nextWakeMs === null ? TAKE_BLOCK_MS : Math.max(1, nextWakeMs - this.o.clock.now().getTime());
    let timer: NodeJS.Timeout | undefined;
    const toFinish = new Promise<void>((resolve) => (lane.wakeToFinish = resolve));
    await Promise.race([lane.waiter, toFinish, new Promise((r) => (timer = setTimeout(r, Math.min(untilWake, TAKE_BLOCK_MS))))]);
    clearTimeout(timer);
  }

  /**
   * What a take whose reply was lost took goes back (else the overdue sweep's grace, 30-60 s);
   * false, after a pause, until that answered. Always on the shared connection: an answer means
   * every earlier give-back sent there (that did not answer in time) has run too.
   */
  private async giveBackLost(lane: Lane, takenBy: number): Promise<boolean> {
    // Held last: a row run again after a run of it ended keeps the running copy's entry.
    const keep = [...(lane.done.get(takenBy) ?? []), ...[...(lane.held.get(takenBy) ?? [])].map(([id, take]) => ({ id, take }))];
    lane.lostTake = !(await within(WORKER_REDIS_WAIT_MS, this.o.ready.giveBack(lane.pool, String(takenBy), { except: keep }), 'give back a lost take').then(() => true, () => false));
    if (lane.lostTake) await new Promise((r) => setTimeout(r, TAKE_BLOCK_MS));
    return !lane.lostTake;
  }

  /** Starts a taken hint; none (undefined) for a second copy of a row this lane runs, which goes back when that run settles. */
  private startOne(lane: Lane, h: TakenHint, takenBy: number): Promise<unknown> | undefined {
    const held = lane.held.get(takenBy) ?? new Map<string, string>();
    lane.held.set(takenBy, held);
    // Renewed while the row runs: a copy's entry holds the slots of both takes (TAKE).
    if (h.slots > 0) lane.limited.set(takenBy, (lane.limited.get(takenBy) ?? new Set<string>()).add(h.id));
    if (held.has(h.id)) return void held.set(h.id, h.take); // the row's one entry is now the copy's
    held.set(h.id, h.take);
    lane.running++;
    const run = this.o.executor
      .execute(lane.pool, h)
      .catch((err: unknown): ExecutionResult => {
        this.o.logger.error({ err, pool: lane.pool, jobId: h.id }, 'delivery failed; the row is rescued with its worker or by the overdue sweep');
        return 'stale';
      })
      .then((result) => this.settle(lane, takenBy, h, result))
      .finally(() => {
        lane.running--;
        this.inFlight.delete(run);
        wake(lane, 'slotFreed');
        // Shutting down, the loops are stopping: free its slots now, not after the slowest handler.
        if (lane.doneHoldsSlots) void (this.closing ? this.finishAll() : wake(lane, 'wakeToFinish'));
      });
    this.inFlight.add(run);
    return run;
  }

  /** Done with (reported with the next take), or its entry back to its flow's head: unstarted, or a copy's taken meanwhile (never run here: a take after this decides). Marks first: a copy taken while a give-back is out runs, the give-back naming the take it undoes. */
  private async settle(lane: Lane, takenBy: number, h: TakenHint, result: ExecutionResult): Promise<void> {
    const held = lane.held.get(takenBy);
    const entry = { id: h.id, take: held?.get(h.id) ?? h.take }; // a copy's, if one was taken meanwhile
    if (held?.delete(h.id) && held.size === 0) lane.held.delete(takenBy);
    lane.limited.get(takenBy)?.delete(h.id);
    if (entry.take === h.take && result !== 'give_back' && result !== 'released') {
      const list = lane.done.get(takenBy);
      if (h.slots > 0) lane.doneHoldsSlots = true;
      return void (list ? list.push(entry) : lane.done.set(takenBy, [entry]));
    }
    await within(WORKER_REDIS_WAIT_MS, this.o.ready.giveBack(lane.pool, String(takenBy), [entry]), 'give back').catch((err: unknown) =>
      this.o.logger.warn({ err, pool: lane.pool }, 'could not give a hint back; a rescue or the overdue sweep puts it back'),
    );
  }

  /** Reports every hint done with that no take carried (tests, shutdown, a rescued id). */
  private finishAll(): Promise<void> {
    const sends: Promise<unknown>[] = [];
    for (const lane of this.lanes) {
      const warn = (err: unknown) => this.o.logger.warn({ err, pool: lane.pool }, 'could not report finished hints; their slots expire');
      for (const [takenBy, entries] of lane.done) sends.push(within(WORKER_REDIS_WAIT_MS, this.o.ready.finish(lane.pool, String(takenBy), entries), 'finish hints').catch(warn));
      lane.done.clear();
      lane.doneHoldsSlots = false;
    }
    const sent: Promise<void> = Promise.all(sends).then(() => void this.finishing.delete(sent));
    this.finishing.add(sent);
    return sent;
  }

  /** Keeps the limit slots of runs still going from expiring (a long handler); a failure is retried next time. */
  async renewSlots(): Promise<void> {
    const nowMs = this.o.clock.now().getTime();
    for (const lane of this.lanes) {
      for (const [takenBy, ids] of lane.limited) {
        if (ids.size === 0) lane.limited.delete(takenBy); // none left under that id
        else await within(WORKER_REDIS_WAIT_MS, this.o.ready.renew(lane.pool, String(takenBy), [...ids], nowMs), 'renew limit slots').catch((err: unknown) =>
          this.o.logger.warn({ err }, 'could not renew limit slots; they expire unless renewed next time'),
        );
      }
    }
  }
}
