import { randomBytes } from 'node:crypto';
import type { QueuedCursor } from '@almanac/persistence';
import type { RedisClient } from '@almanac/platform';

/**
 * - `ok`: the sentinel is there and the server is the one we saw before;
 * - `lost`: the sentinel is gone (FLUSHALL, restart without persistence, failover to an empty
 *   replica) or the recovery of a loss never finished;
 * - `restarted`: same data set, different server process (`run_id` in INFO server changed):
 *   a restart from AOF/RDB or a failover may have dropped the last writes before it; or the
 *   recovery of a restart never finished.
 */
export type RedisEpochStatus = 'ok' | 'lost' | 'restarted';

/**
 * Detects that Redis lost (or may have lost) queue data, instead of waiting for the overdue
 * grace to notice job by job. A small hash `<prefix>:almanac:epoch` {run_id, epoch, recovering}
 * is written by the promoter. Recovery is two-phase so a crash or a second flush during the
 * re-enqueue is noticed again next time: `begin()` writes a fresh epoch with `recovering=1`,
 * the caller re-enqueues in runs of bounded size, each ending with `progress(epoch, after)`
 * (where the next run, of any replica, goes on), and `finish(epoch)` clears the flag; both
 * only if the epoch is still ours. Callers serialise through the overdue sweep's lease, so one
 * replica recovers at once.
 */
export class RedisEpoch {
  readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.key = `${prefix}:almanac:epoch`;
  }

  async check(): Promise<RedisEpochStatus> {
    const [marker, runId] = await Promise.all([this.redis.hgetall(this.key), this.runId()]);
    if (!marker.epoch) return 'lost';
    // An unfinished recovery is of what began it, on whichever server: another restart meanwhile
    // kept the marker, so the data too (taken for a loss, every row was sent again unchecked).
    if (marker.recovering === '1') return marker.found === 'restarted' ? 'restarted' : 'lost';
    return marker.run_id === runId ? 'ok' : 'restarted';
  }

  /** Marks a recovery in progress, of what `status` found; returns the epoch to pass to `finish`. */
  async begin(status: Exclude<RedisEpochStatus, 'ok'>): Promise<string> {
    const epoch = randomBytes(8).toString('hex');
    await this.redis.multi().hdel(this.key, 'after').hset(this.key, { run_id: await this.runId(), epoch, recovering: '1', found: status }).exec();
    return epoch;
  }

  /**
   * The recovery under way on this very server, what began it, and where its re-enqueue got to
   * (null: from the start); null if none. One begun on another server begins again from the start:
   * the restart since may have dropped hints of rows it had passed.
   */
  async resume(): Promise<{ epoch: string; found: Exclude<RedisEpochStatus, 'ok'>; after: QueuedCursor | null } | null> {
    const [marker, runId] = await Promise.all([this.redis.hgetall(this.key), this.runId()]);
    if (!marker.epoch || marker.recovering !== '1' || marker.run_id !== runId) return null;
    const at = marker.after?.indexOf(':') ?? -1;
    return { epoch: marker.epoch, found: marker.found === 'restarted' ? 'restarted' : 'lost', after: at > 0 ? { runAt: new Date(Number(marker.after.slice(0, at))), id: marker.after.slice(at + 1) } : null };
  }

  /** Records where the recovery's re-enqueue got to, unless the marker was lost again (or another recovery began). */
  async progress(epoch: string, after: QueuedCursor): Promise<boolean> {
    return this.ifOurs(epoch, `redis.call('HSET', KEYS[1], 'after', ARGV[2])`, `${after.runAt.getTime()}:${after.id}`);
  }

  /** Ends a recovery unless Redis lost the marker again (or another recovery began) meanwhile. */
  finish(epoch: string): Promise<boolean> {
    return this.ifOurs(epoch, `redis.call('HDEL', KEYS[1], 'recovering', 'after')`);
  }

  private async ifOurs(epoch: string, change: string, ...args: string[]): Promise<boolean> {
    const lua = `if redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then ${change} return 1 end return 0`;
    return ((await this.redis.eval(lua, 1, this.key, epoch, ...args)) as number) === 1;
  }

  /** The run_id of the server holding the marker: through a script on its key, so on a Redis Cluster it is that key's node. */
  private async runId(): Promise<string> {
    const info = (await this.redis.eval(`return redis.call('INFO', 'server')`, 1, this.key)) as string;
    const m = /^run_id:(\S+)/m.exec(info);
    return m?.[1] ?? 'unknown';
  }
}
