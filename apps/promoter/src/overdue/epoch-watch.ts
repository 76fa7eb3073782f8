import type { Sweep, SweepResult } from '../sweeps/sweep';
import type { OverdueSweep } from './overdue.sweep';
import type { RedisEpoch } from './redis-epoch';

/** How often the epoch is looked at: two small reads of Redis. */
export const EPOCH_WATCH_INTERVAL_MS = 1_000;

/**
 * After a recovery the watch runs the overdue sweep again each tick for this long: rows the API
 * created while Redis was away are left `scheduled` until its enqueues go through again (for
 * ALMANAC_ENQUEUE_TIMEOUT_MS after one failed), some after the recovery ran. Left to the overdue
 * sweep's own interval, they ran 16–27 s late (chaos bench, Redis restarted; its sweep's promotion queues them).
 */
export const AFTER_RECOVERY_MS = 10_000;

/**
 * Looks at Redis' epoch every EPOCH_WATCH_INTERVAL_MS and, when Redis lost (or may have lost)
 * its data, runs the overdue sweep's recovery at once, and again each tick for AFTER_RECOVERY_MS.
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
   * Nothing when Redis is as it was, unless a recovery ran within AFTER_RECOVERY_MS (the sweep's
   * own timer may have run it first); else the overdue sweep's run.
   */
  async runOnce(now: Date): Promise<SweepResult> {
    if ((await this.epoch.check()) === 'ok' && !this.overdue.recoveredWithin(now, AFTER_RECOVERY_MS)) return {};
    const { more, skipped } = await this.overdue.runOnce(now);
    return { more, skipped };
  }
}
