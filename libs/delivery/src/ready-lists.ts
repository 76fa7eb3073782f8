import type IORedis from 'ioredis';
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

export function readyListKey(prefix: string, pool: string): string {
  return `${prefix}:almanac:ready:${pool}`;
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
    readonly redis: IORedis,
    readonly prefix: string,
  ) {}

  key(pool: string): string {
    return readyListKey(this.prefix, pool);
  }

  /**
   * Appends `items`; `first` go to the head, in order (light tenants' jobs under contention, see
   * FairQueue's sparse entries), in the same round trip.
   */
  async push(pool: string, items: readonly ReadyItem[], first: readonly ReadyItem[] = []): Promise<void> {
    if (first.length === 0) {
      if (items.length > 0) await this.redis.rpush(this.key(pool), ...items.map(encode));
      return;
    }
    const pipeline = this.redis.pipeline().lpush(this.key(pool), ...[...first].reverse().map(encode));
    if (items.length > 0) pipeline.rpush(this.key(pool), ...items.map(encode));
    for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
  }

  /** Puts items a worker took but will not start back at the head, ahead of newer work. */
  async giveBack(pool: string, items: readonly ReadyItem[]): Promise<void> {
    if (items.length > 0) await this.redis.lpush(this.key(pool), ...[...items].reverse().map(encode));
  }

  async lengths(pools: readonly string[]): Promise<Map<string, number>> {
    if (pools.length === 0) return new Map();
    const pipeline = this.redis.pipeline();
    for (const p of pools) pipeline.llen(this.key(p));
    const replies = (await pipeline.exec()) ?? [];
    return new Map(pools.map((p, i) => [p, Number(replies[i]?.[1] ?? 0)]));
  }

  /** Up to `max` items, without waiting. */
  async take(pool: string, max: number): Promise<ReadyItem[]> {
    if (max <= 0) return [];
    const items = await this.redis.lpop(this.key(pool), max);
    return (items ?? []).map(decode);
  }

  /**
   * Up to `max` items, waiting at most `blockSeconds` for the first one. Runs on `blocking`, a
   * connection of the caller's own: a blocked command holds its connection.
   */
  async takeBlocking(blocking: IORedis, pool: string, max: number, blockSeconds: number): Promise<ReadyItem[]> {
    if (max <= 0) return [];
    const reply = (await blocking.call('BLMPOP', String(blockSeconds), '1', this.key(pool), 'LEFT', 'COUNT', String(max))) as
      | [string, string[]]
      | null;
    return reply ? reply[1].map(decode) : [];
  }
}
