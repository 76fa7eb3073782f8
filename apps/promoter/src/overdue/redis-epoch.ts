import { randomBytes } from 'node:crypto';
import type { RedisClient } from '@almanac/platform';

/**
 * - `ok`: the sentinel is there and the server is the one we saw before;
 * - `lost`: the sentinel is gone (FLUSHALL, restart without persistence, failover to an empty
 *   replica) or a previous recovery never finished;
 * - `restarted`: same data set, different server process (`run_id` in INFO server changed):
 *   a restart from AOF/RDB or a failover may have dropped the last writes before it.
 */
export type RedisEpochStatus = 'ok' | 'lost' | 'restarted';

/**
 * Detects that Redis lost (or may have lost) queue data, instead of waiting for the overdue
 * grace to notice job by job. A small hash `<prefix>:almanac:epoch` {run_id, epoch, recovering}
 * is written by the promoter. Recovery is two-phase so a crash or a second flush during the
 * re-enqueue is noticed again next time: `begin()` writes a fresh epoch with `recovering=1`,
 * the caller re-enqueues, `finish(epoch)` clears the flag only if the epoch is still ours.
 * Callers serialise through the overdue sweep's lease, so one replica recovers at once.
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
    if (!marker.epoch || marker.recovering === '1') return 'lost';
    return marker.run_id === runId ? 'ok' : 'restarted';
  }

  /** Marks a recovery in progress; returns the epoch to pass to `finish`. */
  async begin(): Promise<string> {
    const epoch = randomBytes(8).toString('hex');
    await this.redis.hset(this.key, { run_id: await this.runId(), epoch, recovering: '1' });
    return epoch;
  }

  /** Ends a recovery unless Redis lost the marker again (or another recovery began) meanwhile. */
  async finish(epoch: string): Promise<boolean> {
    const done = (await this.redis.eval(
      `if redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then redis.call('HDEL', KEYS[1], 'recovering') return 1 end return 0`,
      1,
      this.key,
      epoch,
    )) as number;
    return done === 1;
  }

  /** The run_id of the server holding the marker: through a script on its key, so on a Redis Cluster it is that key's node. */
  private async runId(): Promise<string> {
    const info = (await this.redis.eval(`return redis.call('INFO', 'server')`, 1, this.key)) as string;
    const m = /^run_id:(\S+)/m.exec(info);
    return m?.[1] ?? 'unknown';
  }
}
