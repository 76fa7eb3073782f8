import { isCluster, type RedisClient } from '@almanac/platform';

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
  /** expires at, epoch ms by the worker's clock */
  e: number;
  /** the TTL the worker gave its beat (absent in entries written before 2026-12-01) */
  t?: number;
}

/** A dead worker's entry is dropped this long after it expired (it is ignored from expiry on). */
const FORGET_AFTER_MS = 60_000;

/** When this reader last saw an entry change, by its own clock. */
interface Sighting {
  e: number;
  at: number;
}

/**
 * Which workers are alive in each pool, and what they can take: each worker writes its entry
 * (concurrency, running, expiry, TTL) into the pool's hash on every heartbeat. (Which kinds a
 * pool runs is in the kind registry, Postgres table job_kinds.) The dispatcher sums the live entries into a pool's capacity.
 * A worker that dies simply stops renewing its entry; no lock or lease is involved.
 *
 * Liveness is judged without comparing two hosts' clocks: an entry whose expiry changed since
 * this reader last looked is live for its TTL from when the change was seen, by this reader's
 * clock. Only an entry seen for the first time is judged by its expiry against this reader's
 * clock. (Comparing clocks, a dispatcher 5 s ahead of its workers found every heartbeat expired
 * and parked every pool: bench/chaos.ts clock-skew-dispatcher+5s ran jobs 21.7 s late.)
 */
export class WorkerRoster {
  /** pool → worker id → when this reader last saw its entry change. */
  private readonly sightings = new Map<string, Map<string, Sighting>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  // On a Redis Cluster the roster's keys share the hash tag `{roster}`, so its pipelines stay in
  // one slot (a few small hashes, written once a second per worker: no hot spot).
  private get base(): string {
    return isCluster(this.redis) ? `${this.prefix}:almanac:{roster}` : `${this.prefix}:almanac`;
  }

  private poolKey(pool: string): string {
    return `${this.base}:workers:${pool}`;
  }

  private get poolsKey(): string {
    return `${this.base}:pools`;
  }

  /** One pipeline: the worker's entry in each of its pools, and the pool set. */
  async beat(beats: readonly WorkerBeat[], nowMs: number, ttlMs: number): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const b of beats) {
      const entry: StoredBeat = { c: b.concurrency, r: b.running, e: nowMs + ttlMs, t: ttlMs };
      pipeline.hset(this.poolKey(b.pool), b.workerId, JSON.stringify(entry));
      pipeline.sadd(this.poolsKey, b.pool);
    }
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
      // Sightings are kept only for entries still in the hash (a worker that left has none).
      const before = this.sightings.get(pool);
      const seen = new Map<string, Sighting>();
      this.sightings.set(pool, seen);
      for (const [workerId, raw] of Object.entries(entries)) {
        const beat = parseBeat(raw);
        const [state, sighting] = beat ? judge(before?.get(workerId), beat, nowMs) : (['forget'] as const);
        if (sighting) seen.set(workerId, sighting);
        if (state === 'live' && beat) {
          status.workers++;
          status.capacity += beat.c;
          status.running += beat.r;
        } else if (state === 'forget') {
          forget.hdel(this.poolKey(pool), workerId);
          seen.delete(workerId);
          forgetting++;
        }
      }
      out.set(pool, status);
    });
    if (forgetting > 0) await forget.exec();
    return out;
  }
}

/**
 * Live, dead or to forget, from the entry and this reader's last sighting of it; with the
 * sighting to keep for the next call.
 */
function judge(seen: Sighting | undefined, beat: StoredBeat, nowMs: number): readonly [Liveness, Sighting?] {
  if (beat.t === undefined) return [judgeAge(nowMs - beat.e, 0)]; // an entry from before TTLs were stored
  if (!seen) {
    // First sight: only the worker's own expiry to go by, so never forget on it (with a clock
    // skewed by over a minute that deleted a live worker's entry for every dispatcher; found
    // in review). Dead for now, it is forgotten only after a minute of this reader's time.
    const live = beat.e > nowMs;
    return [live ? 'live' : 'dead', { e: beat.e, at: live ? Math.min(nowMs, beat.e - beat.t) : nowMs - beat.t }];
  }
  if (seen.e !== beat.e) return ['live', { e: beat.e, at: nowMs }];
  return [judgeAge(nowMs - seen.at, beat.t), seen];
}

type Liveness = 'live' | 'dead' | 'forget';

/** A dead entry is forgotten this long after it stopped changing (or, unseen before, expired). */
function judgeAge(ageMs: number, ttlMs: number): Liveness {
  if (ageMs < ttlMs) return 'live';
  return ageMs > ttlMs + FORGET_AFTER_MS ? 'forget' : 'dead';
}

function parseBeat(raw: string): StoredBeat | undefined {
  try {
    const v = JSON.parse(raw) as Partial<StoredBeat>;
    return typeof v.c === 'number' && typeof v.r === 'number' && typeof v.e === 'number' ? (v as StoredBeat) : undefined;
  } catch {
    return undefined;
  }
}
