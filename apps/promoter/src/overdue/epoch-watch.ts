import type { Sweep, SweepResult } from '../sweeps/sweep';
import type { OverdueSweep } from './overdue.sweep';
import type { RedisEpoch } from './redis-epoch';

/** How often the epoch is looked at: two small reads of Redis. */
export const EPOCH_WATCH_INTERVAL_MS = 1_000;

/**
 * After a recovery the watch runs the overdue sweep's promotion pass each tick for this long
 * (not its whole run: that would hint again the rows the recovery's hints still carry): rows the API
 * created while Redis was away are left `scheduled` until its enqueues go through again (for
 * ALMANAC_ENQUEUE_TIMEOUT_MS after one failed), some after the recovery ran. Left to the overdue
 * sweep's own interval, they ran 16–27 s late (chaos bench, Redis restarted; its sweep's promotion queues them).
 */
export const AFTER_RECOVERY_MS = 10_000;

/**
 * Looks at Redis' epoch every EPOCH_WATCH_INTERVAL_MS and, when Redis lost (or may have lost)
 * its data, runs the overdue sweep's recovery at once, then its promotion pass each tick for AFTER_RECOVERY_MS.
 * Left to the overdue sweep's own 30 s interval, the queued jobs of an emptied Redis waited up
 * to 30 s for their new hints (chaos bench, Redis restarted empty: 29.2 s past the restart in
 * one run, 1.5 s in another, by phase).
 */
export class EpochWatch implements Sweep {
  readonly name = 'epoch_watch' as const;

  constructor(
    private readonly epoch: RedisEpoch,
    private readonly overdue: OverdueSweep,
  ) {}

  /**
   * The overdue sweep's run when Redis lost its data; its promotion pass within AFTER_RECOVERY_MS
   * of a recovery (the sweep's own timer may have run it); else nothing.
   */
  async runOnce(now: Date): Promise<SweepResult> {
    if ((await this.epoch.check()) === 'ok') {
      if (!this.overdue.recoveredWithin(now, AFTER_RECOVERY_MS)) return {};
      return { more: (await this.overdue.promoteDue(now)).more };
    }
    const { more, skipped } = await this.overdue.runOnce(now);
    return { more, skipped };
  }
}
