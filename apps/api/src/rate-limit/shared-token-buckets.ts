import { ALMANAC_CONFIG, type AlmanacConfig, closeRedis, duplicateRedis, luaScript, MetricsService, REDIS, type RedisClient, runScript, within } from '@almanac/platform';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { TokenBuckets } from './token-bucket';

/**
 * One token bucket per key, `{ tokens, at }` in a Redis hash, refilled at `rate` tokens/s up to
 * `capacity`, as TokenBuckets does in memory. The time is the caller's (ARGV[4], ms): tests step
 * it, and replicas' clocks, a few milliseconds apart under NTP, move a bucket by rate × skew
 * tokens at most; `at` never goes back. A full bucket expires: a key costs memory only while spent.
 * A call that reaches Redis after its caller stopped waiting (ARGV[5], ms by Redis' own clock, as
 * the caller reckons it: a stalled Redis running what queued up) spends nothing: that request was
 * decided without Redis. `cost` is at most `capacity` (the caller's). Answers {1, 0} taken,
 * {0, ms until `cost` would be there} or {2, 0} too late, then Redis' time (ms), from which the
 * caller reckons the next deadline.
 */
const TAKE = luaScript(`
local cost, rate, cap, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local clock = redis.call('TIME')
local redisNow = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if redisNow > tonumber(ARGV[5]) then return {2, 0, redisNow} end
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = cap, now
if b[1] then
  at = math.max(now, tonumber(b[2]))
  tokens = math.min(cap, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) / 1000 * rate)
end
if tokens < cost then
  return {0, math.ceil((cost - tokens) / rate * 1000), redisNow}
end
tokens = tokens - cost
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', at)
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) / rate * 1000) + 60000)
return {1, 0, redisNow}`);

/**
 * How long a request waits for Redis' answer before its replica decides alone: a round trip is
 * well under a millisecond, and a stalled Redis must not hold requests up for long.
 */
const RATE_LIMIT_WAIT_MS = 250;

export type BucketAnswer = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * The API's rate limits' home: their buckets (`buckets(limit)`), their metric, and their
 * connection, on which a command is answered now or not at all. No offline queue (while
 * connecting a call fails at once) and no resending after a reconnect (a resent call would spend
 * a bucket for a request already decided).
 */
@Injectable()
export class RateLimits implements OnModuleInit, OnApplicationShutdown {
  private readonly client: RedisClient;

  constructor(
    @Inject(REDIS) shared: RedisClient,
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
    private readonly metrics: MetricsService,
  ) {
    this.client = duplicateRedis(shared, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
    this.client.on('error', () => undefined); // the shared connection reports outages, once each
  }

  /** The buckets of one limit, keyed `<queue prefix>:rate:<limit>:<tenant>`. */
  buckets(limit: 'ingest' | 'request'): SharedTokenBuckets {
    const local = this.metrics.counter({
      name: 'almanac_rate_limit_local_decisions_total',
      help: 'Rate-limit decisions this API replica took with its own bucket because Redis was not ready, refused or did not answer in time (the limit is then per replica)',
      labelNames: ['limit'],
    });
    return new SharedTokenBuckets(this.client, `${this.config.queuePrefix}:rate:${limit}`, RATE_LIMIT_WAIT_MS, () => local.inc({ limit }));
  }

  /** Boot waits a moment for the connection, so the first requests are limited over every replica too. */
  async onModuleInit(): Promise<void> {
    if (this.client.status === 'ready') return;
    await within(RATE_LIMIT_BOOT_WAIT_MS, new Promise((resolve) => this.client.once('ready', resolve)), 'rate-limit redis').catch(() => undefined);
  }

  onApplicationShutdown(): Promise<void> {
    return closeRedis(this.client);
  }
}

/** At boot, how long the API waits for its rate-limit connection before it starts deciding alone. */
const RATE_LIMIT_BOOT_WAIT_MS = 2_000;

/** After Redis failed a decision, the next ones are taken locally for this long without asking it. */
const LOCAL_AFTER_FAILURE_MS = 1_000;
/** Buckets remembered as short (look()): past this many, the oldest is forgotten. */
const SHORT_REMEMBERED = 10_000;

/**
 * Token buckets every API replica shares, in Redis: N replicas behind a balancer give a tenant
 * its rate, not N times it. Each decision is one script call, bounded by `waitMs`. While Redis is
 * not ready, and for a second after it failed or was slow, the replica decides alone with its own
 * in-memory bucket (the limit is then per replica): an outage refuses no request, and delays one
 * by `waitMs` at most once a second. `onLocal` counts those decisions. A cost above the capacity
 * spends the whole bucket (it could never be taken otherwise).
 *
 * The script's "too late" deadline is in Redis' clock, never this host's: hosts' clocks may be
 * seconds apart, and a replica behind Redis would otherwise find every call late and decide alone
 * (N replicas, N times the rate). Each answer carries Redis' time, so the replica knows Redis' clock
 * minus its own (to within the answer's trip). A "too late" that came back while the caller still
 * waits can only be a wrong reckoning (a first call, a clock step): asked once more, reckoned anew.
 */
export class SharedTokenBuckets {
  private readonly local = new TokenBuckets();
  private localUntilMs = 0;
  /** Redis' clock minus this host's, from the last answer (0 until the first). */
  private redisAheadMs = 0;
  /** Per key, until when (the caller's clock) the last take here found the bucket short. */
  private readonly shortUntil = new Map<string | number, number>();

  constructor(
    private readonly redis: RedisClient,
    /** Key prefix, e.g. `almanac:rate:ingest`; the key is `<prefix>:<key>`. */
    private readonly prefix: string,
    private readonly waitMs: number,
    private readonly onLocal: () => void = () => undefined,
  ) {}

  /** Takes `cost` (at most `capacity`). */
  async take(key: string | number, cost: number, rate: number, capacity: number, nowMs: number): Promise<BucketAnswer> {
    const spend = Math.min(cost, capacity);
    const answer = await this.decide(key, spend, rate, capacity, nowMs);
    this.shortUntil.delete(key);
    // Remembered until one token is back (a request of one could pass), not the refused cost:
    // a refused batch of 1,000 at 10/s must not refuse single jobs for 100 s.
    const oneBackMs = answer.ok ? 0 : answer.retryAfterMs - ((spend - 1) / rate) * 1000;
    if (oneBackMs > 0) {
      if (this.shortUntil.size >= SHORT_REMEMBERED) this.shortUntil.delete(this.shortUntil.keys().next().value as string | number);
      this.shortUntil.set(key, nowMs + oneBackMs);
    }
    return answer;
  }

  /**
   * Whether the last take on this replica found the bucket short and not one token has come back
   * since: asks no one, so looking before every request costs nothing (EarlyAuthHook refuses a
   * body before reading it). Another replica's refusals are not seen: a take still decides.
   */
  look(key: string | number, nowMs: number): BucketAnswer {
    const until = this.shortUntil.get(key);
    return until !== undefined && until > nowMs ? { ok: false, retryAfterMs: until - nowMs } : { ok: true };
  }

  private async decide(key: string | number, spend: number, rate: number, capacity: number, nowMs: number): Promise<BucketAnswer> {
    if (this.redis.status === 'ready' && Date.now() >= this.localUntilMs) {
      const call = { waiting: true };
      try {
        const answer = await within(this.waitMs, this.ask(`${this.prefix}:${key}`, [spend, rate, capacity, nowMs], call), 'rate limit');
        if (answer) return answer;
      } catch {
        this.localUntilMs = Date.now() + LOCAL_AFTER_FAILURE_MS; // refused or slow: decided here for a while (below)
      } finally {
        call.waiting = false; // an answer after this is not asked again
      }
    }
    this.onLocal();
    return this.local.take(key, spend, rate, capacity, nowMs);
  }

  /** The script's answer, or null for "too late"; asked at most twice, within one `waitMs` (above). */
  private async ask(key: string, args: number[], call: { waiting: boolean }): Promise<BucketAnswer | null> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const [code, retryAfterMs, redisNowMs] = await this.run(key, [...args, started + this.redisAheadMs + this.waitMs]);
      const answeredAt = Date.now();
      // Redis ran the script before this host saw its answer: a lower bound, off by the answer's trip.
      this.redisAheadMs = redisNowMs - answeredAt;
      if (code === 1) return { ok: true };
      if (code === 0) return { ok: false, retryAfterMs };
      if (attempt > 0 || !call.waiting || answeredAt - started >= this.waitMs) return null;
    }
  }

  private async run(key: string, args: number[]): Promise<[number, number, number]> {
    return (await runScript(this.redis, TAKE, 1, [key, ...args])) as [number, number, number];
  }
}
