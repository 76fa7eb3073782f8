/**
 * Runs `batch` repeatedly on `concurrency` parallel lanes until a batch comes back short or
 * `maxPerRun` is reached. Each lane claims its own rows (FOR UPDATE SKIP LOCKED), so lanes never
 * share work; they exist because one Postgres backend runs one statement on one core, and the
 * round trips (and Redis' addBulk) of one lane overlap with another lane's SQL.
 *
 * `batch(limit)` returns how many rows it handled; fewer than `limit` means that lane is done.
 * Returns the total and whether the cap cut the run short (`more`).
 */
export async function runBatches(
  opts: { batchSize: number; maxPerRun: number; concurrency: number },
  batch: (limit: number) => Promise<number>,
): Promise<{ total: number; batches: number; more: boolean }> {
  let reserved = 0;
  let total = 0;
  let batches = 0;
  let more = false;
  let failed = false;
  const lane = async () => {
    for (;;) {
      if (failed) return;
      const limit = Math.min(opts.batchSize, opts.maxPerRun - reserved);
      if (limit <= 0) {
        more = true;
        return;
      }
      reserved += limit;
      let n: number;
      try {
        n = await batch(limit);
      } catch (err) {
        failed = true; // the other lanes finish their batch in flight and stop
        throw err;
      }
      reserved -= limit - n;
      total += n;
      batches += 1;
      if (n < limit) return;
    }
  };
  // allSettled: never return (or throw) while a lane still has a transaction open.
  const settled = await Promise.allSettled(Array.from({ length: Math.max(1, opts.concurrency) }, lane));
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  return { total, batches, more };
}
