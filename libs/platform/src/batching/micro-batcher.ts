/**
 * The one batching primitive (ingest group commits, dispatch batches, claims, completions).
 * Coalesces single-item calls into batch calls: items submitted while a flush is running form
 * the next batch. Under light load a batch is one item and goes out on the next tick (no added
 * latency beyond setImmediate); under heavy load batches grow to `maxBatch` by themselves, so
 * the cost of a database round trip is shared by many jobs without any timer to tune.
 */
/** Where submitted items wait for a batch: first come, first served unless the caller orders them. */
export interface BatchQueue<T> {
  readonly size: number;
  push(entry: T): void;
  /** Up to `n` entries (or units of work, as the queue counts them), in the order they should go. */
  take(n: number): T[];
}

export interface MicroBatcherOptions<I = unknown> {
  maxBatch: number;
  /** Flushes allowed in flight at once (each holds one database connection). */
  maxInFlight: number;
  /**
   * The waiting items' order (default FIFO). The dispatcher orders them fairly by tenant, so a
   * burst's 400 batches do not stand in front of another tenant's one job.
   */
  queue?: BatchQueue<{ readonly item: I }>;
}

class Fifo<T> implements BatchQueue<T> {
  private items: T[] = [];
  get size(): number {
    return this.items.length;
  }
  push(entry: T): void {
    this.items.push(entry);
  }
  take(n: number): T[] {
    return this.items.splice(0, n);
  }
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (err: unknown) => void;
}

export class MicroBatcher<I, O> {
  private readonly queue: BatchQueue<Pending<I, O>>;
  private inFlight = 0;
  private scheduled = false;
  private readonly idle = new Set<() => void>();

  /** `run` answers one output per input, in the same order. */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: MicroBatcherOptions<I>,
  ) {
    // The caller's queue holds the same entries it is given; only their order is its own.
    this.queue = (opts.queue as BatchQueue<Pending<I, O>> | undefined) ?? new Fifo<Pending<I, O>>();
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or in flight (shutdown). */
  async drain(): Promise<void> {
    if (this.queue.size === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idle.add(resolve));
  }

  get pending(): number {
    return this.queue.size + this.inFlight;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.size > 0 && this.inFlight < this.opts.maxInFlight) {
      const batch = this.queue.take(this.opts.maxBatch);
      this.inFlight++;
      void this.runBatch(batch);
    }
  }

  private async runBatch(batch: Pending<I, O>[]): Promise<void> {
    try {
      const out = await this.run(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(out[i]));
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.inFlight--;
      if (this.queue.size > 0) this.flush();
      else if (this.inFlight === 0) {
        for (const done of this.idle) done();
        this.idle.clear();
      }
    }
  }
}
