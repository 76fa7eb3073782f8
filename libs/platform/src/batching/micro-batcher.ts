/**
 * The one batching primitive (ingest group commits, claims, completions). Coalesces single-item
 * calls into batch calls: items submitted while a flush is running form the next batch. Under
 * light load a batch is one item and goes out on the next tick (no added latency beyond
 * setImmediate, or `lingerMs` where latency does not matter); under heavy load batches grow to
 * `maxBatch` by themselves, so the cost of a database round trip is shared by many jobs.
 */
export interface MicroBatcherOptions<I> {
  maxBatch: number;
  /**
   * Flushes allowed in flight at once (each holds one database connection). With shareBatches,
   * as many again of batches of items that go alone (see aloneRunning).
   */
  maxInFlight: number;
  /**
   * A batch short of `maxBatch` waits this long for more before it goes (default 0: the next
   * tick). Only for writes nobody waits on: every round trip costs its syscalls, whatever it carries.
   */
  lingerMs?: number;
  /**
   * Items of different keys (tenants) go in batches of their own, the keys taking turns (a key's
   * next batch goes after every other waiting key's), not first come first served: one key's
   * backlog, or its slow calls, hold another key's items back by the batches already running,
   * not by the backlog. `maxInFlight` still bounds the calls, so the connections they hold.
   */
  keyOf?: (item: I) => unknown;
  /**
   * With keyOf: a batch holds every waiting key's items (takeShares), instead of one key's batch
   * at a time: many keys' items then share one call (ingest: one insert and commit for many tenants).
   */
  shareBatches?: boolean;
  /** With shareBatches: the most items one key adds to a batch it shares with other keys (alone, it fills the batch). */
  maxShare?: number;
  /** With shareBatches: items that never share a call with another key's (they go in their key's own batch). */
  alone?: (item: I) => boolean;
}

/**
 * What `run` answers (shareBatches) for an item that must go again in a batch of its key's items
 * only: the call failed for a reason tied to some key's items, which must not fail the others'.
 * From a batch of several keys, each key's items go again as a batch of their own in the same
 * slots (most keys' were not the reason); from a batch of one key, as items that go alone, in
 * slots of their own (a wait on a key's own held rows must not hold the others' slots). The item
 * goes back to the head of its key's queue, so the in-flight bounds still hold and its signal can
 * still withdraw it.
 */
export const RUN_ALONE: unique symbol = Symbol('MicroBatcher.RUN_ALONE');

/** Which slots a batch runs in, and why (see the constructor's `run`). */
export type BatchLane = 'shared' | 'own' | 'alone';

interface Pending<I, O> {
  item: I;
  key: unknown;
  /**
   * Where it goes: `shared`, in batches with other keys' items; `own`, only in a batch of its key's
   * items, in the shared slots (a call of several keys answered RUN_ALONE); `alone`, so, in the
   * slots for those (the `alone` option, or a call of its key alone answered RUN_ALONE).
   */
  lane: BatchLane;
  signal: AbortSignal | undefined;
  resolve: (value: O) => void;
  reject: (err: unknown) => void;
}

export class MicroBatcher<I, O> {
  /** Waiting items by key; the key served last goes to the back. */
  private readonly queues = new Map<unknown, Pending<I, O>[]>();
  private queued = 0;
  private inFlight = 0;
  private scheduled = false;
  private lingering: NodeJS.Timeout | undefined;
  private readonly idle = new Set<() => void>();
  /**
   * With shareBatches: batches running with each key's items, and the keys with a batch of their
   * own items running. A key gets one such batch at a time, and an item going alone starts only
   * when none of its key's batches runs: a batch of one tenant's own may wait on that tenant's key
   * held by its own uncommitted request, as long as it is held, and two would hold every slot
   * from the other keys. A busy key alone loses nothing: its next batch takes all it has waiting.
   */
  private readonly running = new Map<unknown, number>();
  private readonly ownRunning = new Set<unknown>();
  /**
   * With shareBatches: batches of items that go alone, running, up to maxInFlight beside the
   * others' maxInFlight. Such a batch may wait on its key's own held rows as long as they are
   * held: in the same slots, two keys' held every slot from the shared batches of all the others.
   */
  private aloneRunning = 0;
  /**
   * With shareBatches: keys' batches sent back from a shared one, running in the shared slots: all
   * but one of those (with two or more), so fresh shared batches keep a slot while the keys that
   * were the reason find out (review: four held keys' retries held both slots ~300 ms).
   */
  private sentBackRunning = 0;

  /**
   * `run` answers one output per input, in the same order. `lane`: `alone` for a batch of items
   * that go alone (never answered RUN_ALONE), `own` for a key's batch sent back from a shared one
   * (in the shared slots, all but one), else `shared`.
   */
  constructor(
    private readonly run: (items: I[], lane: BatchLane) => Promise<(O | typeof RUN_ALONE)[]>,
    private readonly opts: MicroBatcherOptions<I>,
  ) {
    if (opts.maxShare !== undefined && !(opts.maxShare >= 1)) throw new Error(`MicroBatcher: maxShare must be at least 1 (got ${opts.maxShare})`);
  }

  /**
   * `signal`: once it aborts, an item still waiting for its batch leaves the queue and rejects
   * with the signal's reason; an item already in a running batch runs on. A request answered
   * 503 at its deadline then leaves no write behind to compete, when the database is back, with
   * the requests that still wait for an answer (the chaos bench's 60 s Postgres stall queued
   * ~3,000 such writes and answered 84 later requests in 3–4 s).
   */
  submit(item: I, signal?: AbortSignal): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const lane: BatchLane = this.opts.shareBatches && this.opts.alone?.(item) ? 'alone' : 'shared';
      const pending: Pending<I, O> = { item, key: this.opts.keyOf?.(item), lane, signal, resolve, reject };
      const queue = this.queues.get(pending.key);
      if (queue) queue.push(pending);
      else this.queues.set(pending.key, [pending]);
      this.queued++;
      signal?.addEventListener('abort', () => this.withdraw(pending, signal.reason), { once: true });
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or in flight (shutdown). */
  async drain(): Promise<void> {
    if (this.queued === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idle.add(resolve));
  }

  get pending(): number {
    return this.queued + this.inFlight;
  }

  private withdraw(pending: Pending<I, O>, reason: unknown): void {
    const queue = this.queues.get(pending.key);
    const at = queue ? queue.indexOf(pending) : -1;
    if (!queue || at < 0) return; // in a batch: requeueAlone looks at the signal again
    queue.splice(at, 1);
    if (queue.length === 0) this.queues.delete(pending.key);
    this.queued--;
    pending.reject(reason);
    if (this.queued === 0 && this.inFlight === 0) this.settle();
    else if (this.queued > 0) this.schedule(); // it may have held its key's next items back
  }

  private settle(): void {
    for (const done of this.idle) done();
    this.idle.clear();
  }

  private schedule(): void {
    if (!this.room()) return;
    const linger = this.opts.lingerMs !== undefined && this.opts.lingerMs > 0 && this.queued < this.opts.maxBatch;
    // Already on its way, unless it lingers and the batch has just filled up.
    if (this.scheduled && (linger || !this.lingering)) return;
    clearTimeout(this.lingering);
    this.scheduled = true;
    const go = () => {
      this.scheduled = false;
      this.lingering = undefined;
      this.flush();
    };
    if (linger) this.lingering = setTimeout(go, this.opts.lingerMs);
    else setImmediate(go);
  }

  private flush(): void {
    while (this.queued > 0 && this.room()) {
      const batch = this.take();
      if (batch.length === 0) return; // only keys with a batch of their own running wait
      this.inFlight++;
      void this.runBatch(batch);
    }
  }

  /** Whether a batch could start: a slot of either kind free (shareBatches), else of maxInFlight. */
  private room(): boolean {
    if (!this.opts.shareBatches) return this.inFlight < this.opts.maxInFlight;
    return this.inFlight - this.aloneRunning < this.opts.maxInFlight || this.aloneRunning < this.opts.maxInFlight;
  }

  /** The next batch: the first waiting key's items (one key: first come first served); that key goes to the back. */
  private take(): Pending<I, O>[] {
    if (this.opts.shareBatches) return this.takeShares();
    const [key, queue] = this.queues.entries().next().value!;
    return this.takeKey(key, queue);
  }

  /**
   * The next batch from every waiting key in turn, each adding at most as many items as the
   * largest other key waits with (all of its own, unless it has the most), and at most maxShare:
   * many small keys share a call, and one key's backlog adds to it no more than the others
   * bring; alone, it fills the batch. A key whose next item goes alone gets a batch of its own
   * when ahead in turn of every key whose next item shares and none of its batches runs, and
   * keeps its place otherwise; a key with a batch of its own running waits for it. Such batches
   * and the others each have maxInFlight slots (aloneRunning). Keys served go to the back. []
   * when only items that wait remain.
   */
  private takeShares(): Pending<I, O>[] {
    const aloneRoom = this.aloneRunning < this.opts.maxInFlight;
    const sharedRoom = this.inFlight - this.aloneRunning < this.opts.maxInFlight;
    const ownRoom = sharedRoom && this.sentBackRunning < Math.max(1, this.opts.maxInFlight - 1);
    for (const [key, queue] of this.queues) {
      if (queue[0].lane === 'shared') break;
      if ((queue[0].lane === 'alone' ? aloneRoom : ownRoom) && !this.running.has(key)) return this.takeKey(key, queue);
    }
    if (!sharedRoom) return this.takeOwn(aloneRoom, false);
    // A key with a batch of its own running waits for it: it may be waiting on the key's own rows,
    // and each shared insert it joined would wait on them too and send every key in it back alone.
    const shareable = new Map<unknown, number>();
    for (const [key, queue] of this.queues) {
      if (this.ownRunning.has(key)) continue;
      let n = 0;
      while (n < queue.length && n < this.opts.maxBatch && queue[n].lane === 'shared') n++;
      if (n > 0) shareable.set(key, n);
    }
    if (shareable.size > 0) return this.takePlan(this.planShares(shareable));
    return this.takeOwn(aloneRoom, ownRoom);
  }

  /** A key whose head goes in its own batch, in slots with room, with none of its batches running, if any ([] if none). */
  private takeOwn(aloneRoom: boolean, ownRoom: boolean): Pending<I, O>[] {
    for (const [key, queue] of this.queues) {
      const room = queue[0].lane === 'alone' ? aloneRoom : queue[0].lane === 'own' && ownRoom;
      if (room && !this.running.has(key)) return this.takeKey(key, queue);
    }
    return [];
  }

  /** How many of each shareable key's items the next batch takes (see takeShares), in turn order. */
  private planShares(shareable: Map<unknown, number>): Map<unknown, number> {
    const lengths = [...shareable.values()].sort((a, b) => b - a);
    const plan = new Map<unknown, number>();
    let total = 0;
    for (const [key, n] of shareable) {
      if (total >= this.opts.maxBatch) break;
      const cap = lengths.length === 1 ? n : Math.min(n, n === lengths[0] ? lengths[1] : n, this.opts.maxShare ?? Infinity);
      const take = Math.min(cap, this.opts.maxBatch - total);
      plan.set(key, take);
      total += take;
    }
    return plan;
  }

  /** The planned items off their keys' queues; keys served go to the back. */
  private takePlan(plan: Map<unknown, number>): Pending<I, O>[] {
    const batch: Pending<I, O>[] = [];
    for (const [key, take] of plan) {
      const queue = this.queues.get(key)!;
      for (const p of queue.splice(0, take)) batch.push(p);
      this.queues.delete(key);
      if (queue.length > 0) this.queues.set(key, queue);
    }
    this.queued -= batch.length;
    return batch;
  }

  /** One key's batch (its queue's first maxBatch items, up to one that goes alone unless the first does); the key goes to the back. */
  private takeKey(key: unknown, queue: Pending<I, O>[]): Pending<I, O>[] {
    let n = 1;
    while (n < queue.length && n < this.opts.maxBatch && (queue[0].lane === 'alone' || queue[n].lane !== 'alone')) n++;
    const batch = queue.splice(0, n);
    this.queued -= batch.length;
    this.queues.delete(key);
    if (queue.length > 0) this.queues.set(key, queue);
    return batch;
  }

  /**
   * Items a shared call answered RUN_ALONE go back to the head of their keys' queues, those keys
   * first in turn (they have waited a call already), each marked to go in its key's own batch:
   * in the shared slots from a call of several keys, in those for items that go alone from a call
   * of one key; an item whose signal aborted meanwhile is withdrawn instead (a request answered 503 at its
   * deadline leaves no write behind).
   */
  private requeueAlone(items: Pending<I, O>[], oneKey: boolean): void {
    const byKey = new Map<unknown, Pending<I, O>[]>();
    for (const p of items) {
      if (p.signal?.aborted) {
        p.reject(p.signal.reason);
        continue;
      }
      p.lane = oneKey ? 'alone' : 'own';
      const queue = byKey.get(p.key);
      if (queue) queue.push(p);
      else byKey.set(p.key, [p]);
      this.queued++;
    }
    if (byKey.size === 0) return;
    for (const [key, queue] of this.queues) {
      const back = byKey.get(key);
      byKey.set(key, back ? [...back, ...queue] : queue);
    }
    this.queues.clear();
    for (const [key, queue] of byKey) this.queues.set(key, queue);
  }

  private async runBatch(batch: Pending<I, O>[]): Promise<void> {
    const keys = this.opts.shareBatches ? new Set(batch.map((p) => p.key)) : null;
    for (const key of keys ?? []) this.running.set(key, (this.running.get(key) ?? 0) + 1);
    const [own] = keys?.size === 1 ? keys : [];
    if (keys?.size === 1) this.ownRunning.add(own);
    // A key's own batch holding an item that goes alone runs in the slots for those (takeKey).
    const lane: BatchLane = !keys ? 'shared' : batch.some((p) => p.lane === 'alone') ? 'alone' : batch.some((p) => p.lane === 'own') ? 'own' : 'shared'; // claims and completions (no keys) skip the scans
    const alone = lane === 'alone';
    if (alone) this.aloneRunning++;
    if (lane === 'own') this.sentBackRunning++;
    try {
      const out = await this.run(batch.map((p) => p.item), lane);
      const again = batch.filter((_, i) => out[i] === RUN_ALONE);
      if (again.length > 0 && (alone || !keys)) throw new Error('MicroBatcher: run answered RUN_ALONE for a batch that goes alone');
      batch.forEach((p, i) => {
        const o = out[i];
        if (o !== RUN_ALONE) p.resolve(o);
      });
      this.requeueAlone(again, keys?.size === 1);
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.inFlight--;
      if (alone) this.aloneRunning--;
      if (lane === 'own') this.sentBackRunning--;
      if (keys?.size === 1) this.ownRunning.delete(own);
      for (const key of keys ?? []) {
        const left = this.running.get(key)! - 1;
        if (left > 0) this.running.set(key, left);
        else this.running.delete(key);
      }
      if (this.queued > 0) {
        if (this.opts.lingerMs) this.schedule();
        else this.flush();
      }
      else if (this.inFlight === 0) this.settle();
    }
  }
}
