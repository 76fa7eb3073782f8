import type { PoolStatus, ReadyLists, WorkerRoster } from '@almanac/delivery';

export interface PoolRoomView {
  status: PoolStatus;
  /** items waiting in the pool's ready list */
  ready: number;
  /** jobs the pool may be handed now */
  room: number;
  /** items waiting in the pool's light lane (light tenants' jobs, see LIGHT_LANE_SHARE) */
  light: number;
}

/** Heartbeats are per second; reading them for every batch would only repeat the same answer. */
const STATUS_TTL_MS = 100;

/**
 * How many more jobs a pool may be handed: its live capacity (the sum of its workers'
 * concurrency, from their heartbeats) times the prefetch factor, less what it already holds
 * (ready-list items plus running handlers). A pool with no live worker has no room, so its due
 * jobs wait as queued rows in the backlog instead of anywhere a lease could run out.
 */
export class PoolRoom {
  private readonly cached = new Map<string, { at: number; status: PoolStatus }>();

  constructor(
    private readonly roster: WorkerRoster,
    private readonly ready: ReadyLists,
    /** In flight allowed per unit of capacity: 1 = exactly the free slots; 2 = one more batch waiting. */
    private readonly prefetch: number,
  ) {}

  /** `fresh`: read the heartbeats now rather than reuse a view up to STATUS_TTL_MS old. */
  async rooms(pools: readonly string[], nowMs: number, fresh = false): Promise<Map<string, PoolRoomView>> {
    const [status, lengths] = await Promise.all([this.status(pools, nowMs, fresh), this.ready.lengths(pools)]);
    const out = new Map<string, PoolRoomView>();
    for (const pool of pools) {
      const s = status.get(pool) ?? { pool, workers: 0, capacity: 0, running: 0 };
      const { ready, light } = lengths.get(pool) ?? { ready: 0, light: 0 };
      const room = Math.max(0, Math.floor(s.capacity * this.prefetch) - ready - s.running);
      out.set(pool, { status: s, ready, room, light });
    }
    return out;
  }

  private async status(pools: readonly string[], nowMs: number, fresh: boolean): Promise<Map<string, PoolStatus>> {
    const out = new Map<string, PoolStatus>();
    const stale: string[] = [];
    for (const pool of pools) {
      const c = this.cached.get(pool);
      if (!fresh && c && nowMs - c.at < STATUS_TTL_MS && nowMs >= c.at) out.set(pool, c.status);
      else stale.push(pool);
    }
    for (const [pool, status] of await this.roster.status(stale, nowMs)) {
      this.cached.set(pool, { at: nowMs, status });
      out.set(pool, status);
    }
    return out;
  }
}
