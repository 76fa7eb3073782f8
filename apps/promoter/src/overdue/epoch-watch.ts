import { performance } from 'node:perf_hooks';
import type { Sweep, SweepResult } from '../sweeps/sweep';
import type { OverdueSweep } from './overdue.sweep';
import type { RedisEpoch, RedisEpochStatus } from './redis-epoch';

/** How often the epoch is looked at: two small reads of Redis. */
export const EPOCH_WATCH_INTERVAL_MS = 1_000;

/**
 * After Redis was away the watch runs the overdue sweep's promotion pass each tick for this long
 * (not its whole run: that would hint again the rows a recovery's hints still carry): rows the API
 * created while Redis was away are left `scheduled` until its enqueues go through again (for
 * ALMANAC_ENQUEUE_TIMEOUT_MS after one failed), some after Redis is back. Left to the overdue
 * sweep's own interval, they ran 16–27 s late (chaos bench, Redis restarted; its sweep's promotion queues them).
 */
export const AFTER_RECOVERY_MS = 10_000;

/**
 * A look at the epoch this slow means Redis stalled. A look starts within a tick of a stall's
 * start, so one of over ~1.2 s is seen: the API's enqueues give up after ALMANAC_ENQUEUE_TIMEOUT_MS
 * (1 s by default) and leave rows `scheduled`. A slow look that was no stall costs 10 s of
 * promotion passes over an hour promotion has emptied (two index probes a second).
 */
export const STALLED_CHECK_MS = 200;

/**
 * Looks at Redis' epoch every EPOCH_WATCH_INTERVAL_MS and, when Redis lost (or may have lost)
 * its data, runs the overdue sweep's recovery at once. For AFTER_RECOVERY_MS after Redis was away
 * (a recovery, a look that failed or stalled) it runs the sweep's promotion pass each tick.
 * Left to the overdue sweep's own 30 s interval, the queued jobs of an emptied Redis waited up
 * to 30 s for their new hints (chaos bench, Redis restarted empty: 29.2 s past the restart in
 * one run, 1.5 s in another, by phase).
 */
export class EpochWatch implements Sweep {
  readonly name = 'epoch_watch' as const;
  /** When (by the runs' `now`, plus the look's own time) a look at the epoch last failed or stalled. */
  private awayAtMs: number | null = null;

  constructor(
    private readonly epoch: RedisEpoch,
    private readonly overdue: OverdueSweep,
  ) {}

  /**
   * The overdue sweep's run when Redis lost its data; its promotion pass within AFTER_RECOVERY_MS
   * of Redis being away (a recovery, which the sweep's own timer may have run; a failed or stalled look); else nothing.
   */
  async runOnce(now: Date): Promise<SweepResult> {
    const status = await this.look(now);
    if (status === 'ok') {
      if (!this.overdue.recoveredWithin(now, AFTER_RECOVERY_MS) && !this.awayWithin(now)) return {};
      return { more: (await this.overdue.promoteDue(now)).more };
    }
    const { more, skipped } = await this.overdue.runOnce(now);
    return { more, skipped };
  }

  /** The epoch's status; a look that fails or stalls marks Redis away until it ended (a failing look waits out the command timeout). */
  private async look(now: Date): Promise<RedisEpochStatus> {
    const started = performance.now();
    const away = () => (this.awayAtMs = now.getTime() + (performance.now() - started));
    try {
      const status = await this.epoch.check();
      if (performance.now() - started >= STALLED_CHECK_MS) away();
      return status;
    } catch (err) {
      away();
      throw err;
    }
  }

  private awayWithin(now: Date): boolean {
    const since = this.awayAtMs === null ? -1 : now.getTime() - this.awayAtMs; // < 0: never, the clock stepped back, or the look just now (the next tick follows up)
    return since >= 0 && since <= AFTER_RECOVERY_MS;
  }
}
