/**
 * `attempt()` until it resolves, waiting between tries from `firstMs`, doubling up to `maxMs`.
 * It gives up, throwing the last error, when the next try would start after `until()` (epoch
 * ms); `onRetry` hears each failure that is tried again (to log it).
 */
export async function retryWithBackoff<T>(
  attempt: () => Promise<T>,
  o: { firstMs: number; maxMs: number; until: () => number; now?: () => number; onRetry?: (err: unknown, pauseMs: number) => void },
): Promise<T> {
  const now = o.now ?? Date.now;
  for (let pause = o.firstMs; ; pause = Math.min(2 * pause, o.maxMs)) {
    try {
      return await attempt();
    } catch (err) {
      if (now() + pause > o.until()) throw err;
      o.onRetry?.(err, pause);
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
