import { DEFAULT_SHARE, type Hint, type TenantShare } from '@almanac/domain';
import { type EnvelopeFlow, isCluster, type LuaScript, type RedisClient, runScript, SLOT_TTL_MS } from '@almanac/platform';
import { FINISH, GIVE_BACK, PUSH, RENEW, SYNC_SHARES } from './ready-scripts';
import { TAKE } from './take.lua';

/** A hint a worker took, with the limit slots it holds (TENANT_SLOT | KIND_SLOT; 0 for most). */
export interface TakenHint extends Hint {
  slots: number;
  /** The take that brought it (an id of the pool's): a give-back names it, so it gives back no later copy's entry. */
  take: string;
}

/** A row's entry in a worker's taken hash, as one take left it: FINISH and GIVE_BACK touch it only so, not a later copy's. */
export type TakenEntry = Pick<TakenHint, 'id' | 'take'>;
const pairs = (entries: readonly TakenEntry[]) => entries.flatMap((x) => [x.id, x.take]);

export const TENANT_SLOT = 1;
export const KIND_SLOT = 2;

/** What a take brought, and when a limit may let more go (null: nothing is held back). */
export interface Take {
  hints: TakenHint[];
  nextWakeMs: number | null;
}

/**
 * Each pool's ready lists in Redis (keys: lua-common.ts): the dispatcher's one place to put due
 * hints and the workers' one place to take them, fairly and within limits. Every key of a pool
 * carries the hash tag `{pool:<name>}`, so each script stays within one Redis Cluster slot; on a
 * cluster, tenant-wide slots are therefore counted per pool (docs/architecture.md, Known gaps).
 */
export class ReadyQueues {
  constructor(
    readonly redis: RedisClient,
    readonly prefix: string,
  ) {}

  /** Every key of `pool` starts with this. */
  base(pool: string): string {
    return `${this.prefix}:almanac:{pool:${pool}}`;
  }

  /** Puts flows' items (`<id>:<due ms>`, in due order) into their flows in due order, as they come in an envelope: one script call. */
  async pushFlows(pool: string, flows: readonly EnvelopeFlow[]): Promise<number> {
    if (flows.length === 0) return 0;
    const args: (string | number)[] = [];
    for (const f of flows) args.push(f.tenantId, f.kind, f.items.length, ...f.items);
    return (await this.run(PUSH, pool, Date.now(), args)) as number;
  }

  /** Up to `max` hints for `workerId`, fairly and within limits, into its taken hash; `done` is finished first, in the same call. */
  async take(pool: string, max: number, nowMs: number, workerId: string, done: readonly TakenEntry[] = []): Promise<Take> {
    const reply = (await this.run(TAKE, pool, nowMs, [max, workerId, SLOT_TTL_MS, ...pairs(done)])) as string[];
    const hints = reply.slice(1).map((s): TakenHint => {
      const [id, due, tenant, slots, kind, take] = s.split(':');
      return { id, dueMs: Number(due), tenantId: Number(tenant), slots: Number(slots), kind, take };
    });
    return { hints, nextWakeMs: reply[0] === '' ? null : Number(reply[0]) };
  }

  /** The worker is done with these (run, or dropped by the claim): out of its taken hash, slots freed. */
  async finish(pool: string, workerId: string, entries: readonly TakenEntry[]): Promise<void> {
    if (entries.length > 0) await this.run(FINISH, pool, Date.now(), [workerId, ...pairs(entries)]);
  }

  /** Taken hints the worker will not run go back to the head of their flows (each still the entry of the take named); `all`: every one it holds; `except`: all but those (a copy of theirs as a hint). Returns their ids. */
  async giveBack(pool: string, workerId: string, hints: readonly TakenEntry[] | 'all' | { except: readonly TakenEntry[] }): Promise<string[]> {
    if (Array.isArray(hints) && hints.length === 0) return [];
    const args = hints === 'all' ? [workerId, '1'] : 'except' in hints ? [workerId, '2', ...pairs(hints.except)] : [workerId, '0', ...pairs(hints)];
    return (await this.run(GIVE_BACK, pool, Date.now(), args)) as string[];
  }

  /** Keeps the limit slots of jobs still running from expiring (a long handler). */
  async renew(pool: string, workerId: string, ids: readonly string[], nowMs: number): Promise<void> {
    if (ids.length > 0) await this.run(RENEW, pool, nowMs, [workerId, nowMs + SLOT_TTL_MS, ...ids]);
  }

  /** Replaces the pool's copy of the tenants' weights and limits (those off the default). */
  async syncShares(pool: string, shares: ReadonlyMap<number, TenantShare>): Promise<void> {
    const args: (string | number)[] = [];
    for (const [t, s] of shares) if (!isDefault(s)) args.push(t, encodeShare(s));
    await this.run(SYNC_SHARES, pool, Date.now(), args);
  }

  /**
   * The due time of the first item of each flow (`<tenant>:<kind>`) of `pool`, or null for an
   * empty flow: what a repair compares with (one pipeline, within the pool's slot).
   */
  async heads(pool: string, flows: readonly { tenantId: number; kind: string }[]): Promise<(number | null)[]> {
    if (flows.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const f of flows) pipeline.lindex(`${this.base(pool)}:q:${f.tenantId}:${f.kind}`, 0);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([err, item]) => {
      if (err) throw err;
      return typeof item === 'string' ? Number(item.slice(item.lastIndexOf(':') + 1)) : null;
    });
  }

  /** Items waiting per pool (for gauges); sent together, one command per pool. */
  async waiting(pools: readonly string[]): Promise<Map<string, number>> {
    const counts = await Promise.all(pools.map((p) => this.redis.get(`${this.base(p)}:waiting`)));
    return new Map(pools.map((p, i) => [p, Math.max(0, Number(counts[i] ?? 0))]));
  }

  /** Blocks on `blocking` (the caller's own connection) until a push or a finish signals work in `pool`, or `timeoutMs`; true when woken. */
  async waitForWork(blocking: RedisClient, pool: string, timeoutMs: number): Promise<boolean> {
    const seconds = Math.max(0.01, timeoutMs / 1000).toFixed(3);
    return (await blocking.blpop(`${this.base(pool)}:wake`, seconds)) !== null;
  }

  /** The pool's script; its first key, the pool's, routes it on a cluster. */
  private run(s: LuaScript, pool: string, nowMs: number, args: readonly (string | number)[]): Promise<unknown> {
    const base = this.base(pool);
    return runScript(this.redis, s, 1, [`${base}:tenants`, base, isCluster(this.redis) ? `${base}:limit:` : `${this.prefix}:almanac:limit:`, nowMs, ...args]); // tenant-wide slots: see the class
  }
}

function isDefault(s: TenantShare): boolean {
  return s.weight === DEFAULT_SHARE.weight && s.maxConcurrency === null && s.kindLimits === null && !s.held;
}

/** `<weight>|<maxConcurrency>|<held 0/1>|<kind>=<perSecond>/<concurrency>,…` (a kind has no `=`, `/` or `,`). */
export function encodeShare(s: TenantShare): string {
  const kinds = Object.entries(s.kindLimits ?? {}).map(([k, l]) => `${k}=${l.perSecond ?? ''}/${l.concurrency ?? ''}`);
  return `${s.weight}|${s.maxConcurrency ?? ''}|${s.held ? 1 : 0}|${kinds.join(',')}`;
}
