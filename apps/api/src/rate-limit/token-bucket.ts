/**
 * A token bucket per key, in process memory: refilled continuously at `rate` tokens/s up to
 * `capacity`. Time is an argument so tests drive it without sleeping. Per API replica: with N
 * replicas behind a balancer a tenant gets up to N × its rate, which is the price of keeping a
 * Redis round trip off every ingest request.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string | number, { tokens: number; at: number }>();

  /** Takes `cost` tokens or none; on refusal says how long until `cost` would be available. */
  take(key: string | number, cost: number, rate: number, capacity: number, nowMs: number): { ok: true } | { ok: false; retryAfterMs: number } {
    const answer = this.peek(key, cost, rate, capacity, nowMs);
    if (answer.ok) (this.buckets.get(key) as { tokens: number }).tokens -= cost;
    return answer;
  }

  /** Whether `cost` tokens are there now, taking none (an attempt limit looks before it counts). */
  peek(key: string | number, cost: number, rate: number, capacity: number, nowMs: number): { ok: true } | { ok: false; retryAfterMs: number } {
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: capacity, at: nowMs };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(capacity, b.tokens + ((nowMs - b.at) / 1000) * rate);
    b.at = nowMs;
    if (b.tokens >= cost) return { ok: true };
    return { ok: false, retryAfterMs: Math.ceil(((Math.min(cost, capacity) - b.tokens) / rate) * 1000) };
  }
}
