/**
 * The one batching primitive (ingest group commits, claims, completions). Coalesces single-item
 * calls into batch calls: items submitted while a flush is running form the next batch. Under
 * light load a batch is one item and goes out on the next tick (no added latency beyond
 * setImmediate, or `lingerMs` where latency does not matter); under heavy load batches grow to
 * `maxBatch` by themselves, so the cost of a database round trip is shared by many jobs.
 */
export interface MicroBatcherOptions<I> {
  maxBatch: number;
  /** Flushes allowed in flight at once (each holds one database connection). */
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
}

interface Pending<I, O> {
  item: I;
  key: unknown;
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

  /** `run` answers one output per input, in the same order. */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: MicroBatcherOptions<I>,
  ) {}

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
      const pending: Pending<I, O> = { item, key: this.opts.keyOf?.(item), resolve, reject };
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
    if (!queue || at < 0) return; // already in a batch
    queue.splice(at, 1);
    if (queue.length === 0) this.queues.delete(pending.key);
    this.queued--;
    pending.reject(reason);
    if (this.queued === 0 && this.inFlight === 0) this.settle();
  }

  private settle(): void {
    for (const done of this.idle) done();
    this.idle.clear();
  }

  private schedule(): void {
    if (this.inFlight >= this.opts.maxInFlight) return;
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
    while (this.queued > 0 && this.inFlight < this.opts.maxInFlight) {
      const batch = this.take();
      this.inFlight++;
      void this.runBatch(batch);
    }
  }

  /** The next batch: the first waiting key's items (one key: first come first served); that key goes to the back. */
  private take(): Pending<I, O>[] {
    if (this.opts.shareBatches) return this.takeShares();
    const [key, queue] = this.queues.entries().next().value!;
    const batch = queue.splice(0, this.opts.maxBatch);
    this.queued -= batch.length;
    this.queues.delete(key);
    if (queue.length > 0) this.queues.set(key, queue);
    return batch;
  }

  /**
   * The next batch from every waiting key in turn, each adding at most as many items as the
   * largest other key waits with (all of its own, unless it has the most): many small keys share
   * a call, and one key's backlog adds to it no more than the others bring; alone, it fills the
   * batch. Keys served go to the back.
   */
  private takeShares(): Pending<I, O>[] {
    const lengths = [...this.queues.values()].map((q) => q.length).sort((a, b) => b - a);
    const batch: Pending<I, O>[] = [];
    for (const [key, queue] of [...this.queues]) {
      if (batch.length >= this.opts.maxBatch) break;
      const cap = queue.length === lengths[0] ? (lengths[1] ?? Infinity) : queue.length;
      for (const p of queue.splice(0, Math.min(cap, this.opts.maxBatch - batch.length))) batch.push(p);
      this.queues.delete(key);
      if (queue.length > 0) this.queues.set(key, queue);
    }
    this.queued -= batch.length;
    return batch;
  }

  private async runBatch(batch: Pending<I, O>[]): Promise<void> {
    try {
      const out = await this.run(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(out[i]));
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.inFlight--;
      if (this.queued > 0) {
        if (this.opts.lingerMs) this.schedule();
        else this.flush();
      }
      else if (this.inFlight === 0) this.settle();
    }
  }
}
