import type IORedis from 'ioredis';

/**
 * A job handed to a pool: its row id and due time. The row is still `queued`; the worker that
 * takes the item claims the row as its handler starts, so an item nobody takes costs no attempt.
 */
export interface ReadyItem {
  id: string;
  /** due time, epoch ms (lag is measured from it; the worker waits for it) */
  dueMs: number;
}

export function readyListKey(prefix: string, pool: string): string {
  return `${prefix}:almanac:ready:${pool}`;
}

function encode(i: ReadyItem): string {
  return `${i.id}:${i.dueMs}`;
}

function decode(s: string): ReadyItem {
  const at = s.indexOf(':');
  return { id: s.slice(0, at), dueMs: Number(s.slice(at + 1)) };
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
    private readonly redis: IORedis,
    private readonly prefix: string,
  ) {}

  key(pool: string): string {
    return readyListKey(this.prefix, pool);
  }

  async push(pool: string, items: readonly ReadyItem[]): Promise<void> {
    if (items.length > 0) await this.redis.rpush(this.key(pool), ...items.map(encode));
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
