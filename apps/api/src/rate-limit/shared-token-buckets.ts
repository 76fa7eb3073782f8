import { createHash } from 'node:crypto';
import { type MetricsService, type RedisClient, within } from '@almanac/platform';
import { TokenBuckets } from './token-bucket';

/**
 * One token bucket per key, `{ tokens, at }` in a Redis hash, refilled at `rate` tokens/s up to
 * `capacity`, as TokenBuckets does in memory. The time is the caller's (ARGV[4], ms): tests step
 * it, and replicas' clocks, a few milliseconds apart under NTP, move a bucket by rate × skew
 * tokens at most; `at` never goes back. A full bucket expires: a key costs memory only while spent.
 * Answers {1, 0} taken, or {0, ms until `cost` would be there}.
 */
const TAKE_LUA = `
local cost, rate, cap, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = cap, now
if b[1] then
  at = math.max(now, tonumber(b[2]))
  tokens = math.min(cap, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) / 1000 * rate)
end
if tokens < cost then
  return {0, math.ceil((math.min(cost, cap) - tokens) / rate * 1000)}
end
tokens = tokens - cost
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', at)
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) / rate * 1000) + 60000)
return {1, 0}`;
const TAKE_SHA = createHash('sha1').update(TAKE_LUA).digest('hex');

/** ioredis states in which a command would only queue: the local bucket answers at once instead. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

/**
 * How long a request waits for Redis' answer before its replica decides alone: a round trip is
 * well under a millisecond, and a stalled Redis must not hold every request up for long.
 */
export const RATE_LIMIT_WAIT_MS = 250;

/** Counts the decisions a replica took alone, per limit (Redis down or slow). */
export function localDecisions(metrics: MetricsService, limit: 'ingest' | 'read'): () => void {
  const counter = metrics.counter({
    name: 'almanac_rate_limit_local_decisions_total',
    help: 'Rate-limit decisions this API replica took with its own bucket because Redis did not answer (the limit is then per replica)',
    labelNames: ['limit'],
  });
  return () => counter.inc({ limit });
}

export type BucketAnswer = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * Token buckets every API replica shares, in Redis: N replicas behind a balancer give a tenant
 * its rate, not N times it. Each decision is one script call (~1 round trip), bounded by
 * `waitMs`; when Redis is down or slow the replica decides alone with its own in-memory bucket
 * (the limit is then per replica, as it was before), so an outage neither refuses nor stalls
 * requests. `onLocal` counts those decisions.
 */
export class SharedTokenBuckets {
  private readonly local = new TokenBuckets();

  constructor(
    private readonly redis: RedisClient,
    /** Key prefix, e.g. `almanac:rate:ingest`; the key is `<prefix>:<key>`. */
    private readonly prefix: string,
    private readonly waitMs: number,
    private readonly onLocal: () => void = () => undefined,
  ) {}

  async take(key: string | number, cost: number, rate: number, capacity: number, nowMs: number): Promise<BucketAnswer> {
    if (!DOWN.has(this.redis.status)) {
      try {
        const [ok, retryAfterMs] = await within(this.waitMs, this.run(`${this.prefix}:${key}`, [cost, rate, capacity, nowMs]), 'rate limit');
        return ok === 1 ? { ok: true } : { ok: false, retryAfterMs };
      } catch {
        // Redis refused or did not answer in time: decided here alone (below).
      }
    }
    this.onLocal();
    return this.local.take(key, cost, rate, capacity, nowMs);
  }

  /** EVALSHA, else EVAL (the script cache is empty after a restart). */
  private async run(key: string, args: number[]): Promise<[number, number]> {
    try {
      return (await this.redis.evalsha(TAKE_SHA, 1, key, ...args)) as [number, number];
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return (await this.redis.eval(TAKE_LUA, 1, key, ...args)) as [number, number];
    }
  }
}
