/**
 * Group commit, the way databases do it: a group leaves as soon as a commit slot is free, at the
 * end of the current event-loop turn (so requests parsed together go together); while
 * `maxInFlight` groups are committing, new items wait and leave together when one finishes.
 * An idle API therefore adds no wait at all, and a thousand POSTs arriving at once cost a
 * handful of statements. `maxItems` caps a group. `flush` answers per item, in order; if it
 * throws, every caller of that group gets the error.
 */
export class GroupCommit<I, O> {
  private pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly flush: (items: I[]) => Promise<O[]>,
    private readonly opts: { maxInFlight: number; maxItems: number },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.opts.maxItems) this.flushNow();
      else this.schedule();
    });
  }

  /** Waits for every group handed to `flush` so far, and the one waiting (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.pending.length || this.inFlight.size) {
      if (this.pending.length) this.flushNow();
      await Promise.all([...this.inFlight]);
    }
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight.size >= this.opts.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.inFlight.size < this.opts.maxInFlight) this.flushNow();
    });
  }

  private flushNow(): void {
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return;
    // Through a promise so that a flush throwing synchronously still answers its callers.
    const run = Promise.resolve(group.map((g) => g.item)).then((items) => this.flush(items)).then(
      (outs) => group.forEach((g, i) => g.resolve(outs[i])),
      (err: unknown) => group.forEach((g) => g.reject(err)),
    );
    this.inFlight.add(run);
    void run.finally(() => {
      this.inFlight.delete(run);
      if (this.pending.length) this.schedule();
    });
  }
}
