/**
 * A token bucket per key, in process memory: refilled continuously at `rate` tokens/s up to
 * `capacity`. Time is an argument so tests drive it without sleeping. Budgets of this replica
 * alone (failed sign-ins, key lookups), and the stand-in for SharedTokenBuckets while Redis does
 * not answer. A key with a full bucket holds no memory, and at most `maxKeys` buckets are kept
 * (the oldest goes first): keys an attacker picks (addresses) cannot grow the map.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string | number, { tokens: number; at: number }>();

  constructor(private readonly maxKeys = Infinity) {}

  /** Takes `cost` tokens or none; on refusal says how long until `cost` would be available. */
  take(key: string | number, cost: number, rate: number, capacity: number, nowMs: number): { ok: true } | { ok: false; retryAfterMs: number } {
    const tokens = this.tokens(key, rate, capacity, nowMs);
    if (tokens < cost) return { ok: false, retryAfterMs: Math.ceil(((Math.min(cost, capacity) - tokens) / rate) * 1000) };
    this.buckets.delete(key); // re-inserted as the newest
    this.buckets.set(key, { tokens: tokens - cost, at: nowMs });
    while (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value as string | number);
    return { ok: true };
  }

  /** Whether `cost` tokens are there now, taking none (an attempt limit looks before it counts). */
  peek(key: string | number, cost: number, rate: number, capacity: number, nowMs: number): { ok: true } | { ok: false; retryAfterMs: number } {
    const tokens = this.tokens(key, rate, capacity, nowMs);
    if (tokens >= cost) return { ok: true };
    return { ok: false, retryAfterMs: Math.ceil(((Math.min(cost, capacity) - tokens) / rate) * 1000) };
  }

  private tokens(key: string | number, rate: number, capacity: number, nowMs: number): number {
    const b = this.buckets.get(key);
    if (!b) return capacity;
    if (nowMs < b.at) b.at = nowMs; // a clock stepped back: refill from now, or the bucket stays empty for as long as the step
    const tokens = Math.min(capacity, b.tokens + ((nowMs - b.at) / 1000) * rate);
    if (tokens >= capacity) this.buckets.delete(key); // full again: nothing to remember
    return tokens;
  }
}
