import type IORedis from 'ioredis';

/** What one worker process says about one pool it serves, on every heartbeat. */
export interface WorkerBeat {
  workerId: string;
  pool: string;
  /** handlers it runs at once in this pool */
  concurrency: number;
  /** handlers running now */
  running: number;
}

export interface PoolStatus {
  pool: string;
  /** workers whose last heartbeat has not expired */
  workers: number;
  /** the sum of their concurrency */
  capacity: number;
  /** the sum of their running handlers, as of their last heartbeat */
  running: number;
}

interface StoredBeat {
  c: number;
  r: number;
  /** expires at, epoch ms */
  e: number;
}

/** A dead worker's entry is dropped this long after it expired (it is ignored from expiry on). */
const FORGET_AFTER_MS = 60_000;

/**
 * Which workers are alive in each pool, and what they can take: each worker writes its entry
 * (concurrency, running, expiry) into the pool's hash on every heartbeat, and registers the
 * kinds it serves with their pool. The dispatcher sums the live entries into a pool's capacity.
 * A worker that dies simply stops renewing its entry; no lock or lease is involved.
 */
export class WorkerRoster {
  constructor(
    private readonly redis: IORedis,
    private readonly prefix: string,
  ) {}

  private poolKey(pool: string): string {
    return `${this.prefix}:almanac:workers:${pool}`;
  }

  private get poolsKey(): string {
    return `${this.prefix}:almanac:pools`;
  }

  private get kindsKey(): string {
    return `${this.prefix}:almanac:kinds`;
  }

  /** One pipeline: the worker's entry in each of its pools, the pool set, and its kinds. */
  async beat(beats: readonly WorkerBeat[], kinds: ReadonlyMap<string, string>, nowMs: number, ttlMs: number): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const b of beats) {
      const entry: StoredBeat = { c: b.concurrency, r: b.running, e: nowMs + ttlMs };
      pipeline.hset(this.poolKey(b.pool), b.workerId, JSON.stringify(entry));
      pipeline.sadd(this.poolsKey, b.pool);
    }
    if (kinds.size > 0) pipeline.hset(this.kindsKey, Object.fromEntries(kinds));
    await pipeline.exec();
  }

  /** A worker shutting down takes itself out at once, so no work is handed to it meanwhile. */
  async leave(workerId: string, pools: readonly string[]): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const p of pools) pipeline.hdel(this.poolKey(p), workerId);
    await pipeline.exec();
  }

  /** Every pool a worker ever announced. */
  async pools(): Promise<string[]> {
    return (await this.redis.smembers(this.poolsKey)).sort();
  }

  /** kind → pool, as the workers registered them. */
  async kinds(): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.redis.hgetall(this.kindsKey)));
  }

  async status(pools: readonly string[], nowMs: number): Promise<Map<string, PoolStatus>> {
    const out = new Map<string, PoolStatus>();
    if (pools.length === 0) return out;
    const pipeline = this.redis.pipeline();
    for (const p of pools) pipeline.hgetall(this.poolKey(p));
    const replies = (await pipeline.exec()) ?? [];
    const forget = this.redis.pipeline();
    let forgetting = 0;
    pools.forEach((pool, i) => {
      const status: PoolStatus = { pool, workers: 0, capacity: 0, running: 0 };
      const entries = (replies[i]?.[1] ?? {}) as Record<string, string>;
      for (const [workerId, raw] of Object.entries(entries)) {
        const beat = parseBeat(raw);
        if (beat && beat.e > nowMs) {
          status.workers++;
          status.capacity += beat.c;
          status.running += beat.r;
        } else if (!beat || beat.e < nowMs - FORGET_AFTER_MS) {
          forget.hdel(this.poolKey(pool), workerId);
          forgetting++;
        }
      }
      out.set(pool, status);
    });
    if (forgetting > 0) await forget.exec();
    return out;
  }
}

function parseBeat(raw: string): StoredBeat | undefined {
  try {
    const v = JSON.parse(raw) as Partial<StoredBeat>;
    return typeof v.c === 'number' && typeof v.r === 'number' && typeof v.e === 'number' ? (v as StoredBeat) : undefined;
  } catch {
    return undefined;
  }
}
