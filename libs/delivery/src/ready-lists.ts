import { isCluster, type RedisClient } from '@almanac/platform';
import type { HeldSlots } from './limit-slots';

/**
 * A job handed to a pool: its row id and due time. The row is still `queued`; the worker that
 * takes the item claims the row as its handler starts, so an item nobody takes costs no attempt.
 */
export interface ReadyItem {
  id: string;
  /** due time, epoch ms (lag is measured from it; the worker waits for it) */
  dueMs: number;
  /** The limit slots the hand-off holds (a limited tenant's job), released when its run ends. */
  slots?: Omit<HeldSlots, 'id'>;
}

/**
 * On a Redis Cluster (`cluster`) a pool's two lists share the hash tag `{pool:<pool>}`: they live
 * in one slot (one push writes both), and different pools spread over the nodes.
 */
export function readyListKey(prefix: string, pool: string, light = false, cluster = false): string {
  const name = `${prefix}:almanac:${light ? 'ready-light' : 'ready'}`;
  return cluster ? `${name}:{pool:${pool}}` : `${name}:${pool}`;
}

/**
 * Each worker keeps this share of its concurrency (at least one slot) for a pool's *light lane*:
 * a second ready list, for light tenants' jobs (a tenant's only job waiting while the pool is
 * busy), that no other job can fill. At the start of a 200,000-row burst every main slot starts
 * at once and frees at once (a claim, the handler, the completion commit), and a light tenant's
 * job at the head of the main list still waited ~250 ms for one (bench/fairness.ts). The
 * dispatcher keeps a pool's light list within the same share of the pool's capacity.
 */
export const LIGHT_LANE_SHARE = 1 / 16;

export function lightLaneSlots(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency * LIGHT_LANE_SHARE));
}

/**
 * `<id>:<due ms>`, or `<id>:<due ms>:<tenant>:<slot mask>:<token>:<kind>` when it holds limit
 * slots (a kind has no `:`).
 */
function encode(i: ReadyItem): string {
  const s = i.slots;
  return s ? `${i.id}:${i.dueMs}:${s.tenantId}:${s.mask}:${s.token}:${s.kind}` : `${i.id}:${i.dueMs}`;
}

function decode(s: string): ReadyItem {
  const [id, due, tenant, mask, token, kind] = s.split(':');
  const item: ReadyItem = { id, dueMs: Number(due) };
  if (kind !== undefined) item.slots = { tenantId: Number(tenant), mask: Number(mask), token, kind };
  return item;
}

/**
 * The hand-off from dispatcher to workers: one Redis list per pool, kept short by the dispatcher
 * (a pool's live capacity times the prefetch factor). A batch is one RPUSH and a worker takes as
 * many items as it has free slots in one LPOP/BLMPOP, so the second hop costs a few bytes and a
 * share of a command per job instead of a BullMQ job (which measured ~70 µs of CPU per job
 * across the worker and Redis). Losing a list loses nothing: its rows are queued and the overdue
 * sweep re-enqueues them.
 */
export class ReadyLists {
  constructor(
    readonly redis: RedisClient,
    readonly prefix: string,
  ) {}

  /** The pool's ready list, or its light lane's (`light`). */
  key(pool: string, light = false): string {
    return readyListKey(this.prefix, pool, light, isCluster(this.redis));
  }

  /**
   * Appends `items`; `first` go to the head, in order (light tenants' jobs when the light lane is
   * full, and jobs holding limit slots), and `light` to the light lane's list, all in the same
   * round trip.
   */
  async push(pool: string, items: readonly ReadyItem[], first: readonly ReadyItem[] = [], light: readonly ReadyItem[] = []): Promise<void> {
    if (first.length === 0 && light.length === 0) {
      if (items.length > 0) await this.redis.rpush(this.key(pool), ...items.map(encode));
      return;
    }
    const pipeline = this.redis.pipeline();
    if (light.length > 0) pipeline.rpush(this.key(pool, true), ...light.map(encode));
    if (first.length > 0) pipeline.lpush(this.key(pool), ...[...first].reverse().map(encode));
    if (items.length > 0) pipeline.rpush(this.key(pool), ...items.map(encode));
    for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
  }

  /** Puts items a worker took but will not start back at the head of the list they came from, ahead of newer work. */
  async giveBack(pool: string, items: readonly ReadyItem[], light = false): Promise<void> {
    if (items.length > 0) await this.redis.lpush(this.key(pool, light), ...[...items].reverse().map(encode));
  }

  /**
   * Per pool, the lengths of its ready list and of its light lane's. Sent together (the delivery
   * connection pipelines them into one write); not one pipeline, which on a cluster must stay
   * within one node.
   */
  async lengths(pools: readonly string[]): Promise<Map<string, { ready: number; light: number }>> {
    const replies = await Promise.all(pools.map((p) => Promise.all([this.redis.llen(this.key(p)), this.redis.llen(this.key(p, true))])));
    return new Map(pools.map((p, i) => [p, { ready: replies[i][0], light: replies[i][1] }]));
  }

  /** Up to `max` items, without waiting. */
  async take(pool: string, max: number, light = false): Promise<ReadyItem[]> {
    if (max <= 0) return [];
    const items = await this.redis.lpop(this.key(pool, light), max);
    return (items ?? []).map(decode);
  }

  /**
   * Up to `max` items, waiting at most `blockSeconds` for the first one. Runs on `blocking`, a
   * connection of the caller's own: a blocked command holds its connection.
   */
  async takeBlocking(blocking: RedisClient, pool: string, max: number, blockSeconds: number, light = false): Promise<ReadyItem[]> {
    if (max <= 0) return [];
    const reply = (await blocking.call('BLMPOP', String(blockSeconds), '1', this.key(pool, light), 'LEFT', 'COUNT', String(max))) as
      | [string, string[]]
      | null;
    return reply ? reply[1].map(decode) : [];
  }
}
