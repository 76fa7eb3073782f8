/**
 * Group commit: callers submit one item each; items arriving within `windowMs` of the first
 * (or until `maxItems`) are handed to `flush` together, so a thousand concurrent single-job
 * POSTs cost a handful of statements instead of a thousand transactions. `flush` answers per
 * item, in order; if it throws, every caller of that group gets the error.
 */
export class GroupCommit<I, O> {
  private pending: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly flush: (items: I[]) => Promise<O[]>,
    private readonly opts: { windowMs: number; maxItems: number },
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.opts.maxItems) this.flushNow();
      else if (!this.timer) this.timer = setTimeout(() => this.flushNow(), this.opts.windowMs);
    });
  }

  /** Waits for every group handed to `flush` so far (shutdown, tests). */
  async drain(): Promise<void> {
    if (this.pending.length) this.flushNow();
    await Promise.all([...this.inFlight]);
  }

  private flushNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return;
    const run = this.flush(group.map((g) => g.item)).then(
      (outs) => group.forEach((g, i) => g.resolve(outs[i])),
      (err: unknown) => group.forEach((g) => g.reject(err)),
    );
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }
}
