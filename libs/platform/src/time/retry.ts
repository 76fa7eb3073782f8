/**
 * `attempt()` until it resolves, waiting between tries from `firstMs`, doubling up to `maxMs`.
 * It gives up, throwing the last error, when the next try would start after `until()` (epoch
 * ms); `onRetry` hears each failure that is tried again (to log it). `failed`: the error a first
 * try made elsewhere already ended with (a hot path that tries once without this loop): the
 * loop starts with its first pause.
 */
export async function retryWithBackoff<T>(
  attempt: () => Promise<T>,
  o: { firstMs: number; maxMs: number; until: () => number; now?: () => number; onRetry?: (err: unknown, pauseMs: number) => void; failed?: unknown },
): Promise<T> {
  const now = o.now ?? Date.now;
  let last = o.failed;
  for (let pause = o.firstMs, tried = last !== undefined; ; pause = Math.min(2 * pause, o.maxMs), tried = false) {
    if (!tried) {
      try {
        return await attempt();
      } catch (err) {
        last = err;
      }
    }
    if (now() + pause > o.until()) throw last;
    o.onRetry?.(last, pause);
    await new Promise((r) => setTimeout(r, pause));
  }
}
