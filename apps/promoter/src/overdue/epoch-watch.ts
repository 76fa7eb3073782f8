import type { Sweep, SweepResult } from '../sweeps/sweep';
import type { OverdueSweep } from './overdue.sweep';
import type { RedisEpoch } from './redis-epoch';

/** How often the epoch is looked at: two small reads of Redis. */
export const EPOCH_WATCH_INTERVAL_MS = 1_000;

/**
 * After a promotion pass failed, the watch's passes wait this long (its looks go on each tick): a
 * Redis that answers reads but refuses writes (maxmemory) would otherwise have a batch of up to
 * ALMANAC_PROMOTION_BATCH_SIZE rows queued and put back each second, and an error logged each
 * time. The sweeps' own retry after a failure (SweepRunner) is as long.
 */
export const PASS_RETRY_MS = 5_000;

/**
 * Each tick, looks at Redis' epoch: when Redis lost (or may have lost) its data it runs the
 * overdue sweep's recovery at once; else the sweep's promotion pass, which queues the rows the API
 * left `scheduled` because its enqueue failed (Redis down, stalled, or cut off from the API alone)
 * within a second of Redis answering the promoter. Left to the overdue sweep's own 30 s interval,
 * the queued jobs of an emptied Redis waited up to 30 s for their new hints (chaos bench, Redis
 * restarted empty: 29.2 s past the restart in one run, 1.5 s in another, by phase), and the API's
 * rows after a restart 16–27 s. With nothing left due the pass is one probe of jobs_cold_due
 * (DUE_COLD_TENANTS_SQL). It is the pass alone, not the sweep's whole run,
 * which would hint again the rows a recovery's hints still carry.
 */
export class EpochWatch implements Sweep {
  readonly name = 'epoch_watch' as const;
  /** When (by the runs' `now`) the last promotion pass failed. */
  private passFailedAtMs: number | null = null;

  constructor(
    private readonly epoch: RedisEpoch,
    private readonly overdue: OverdueSweep,
  ) {}

  async runOnce(now: Date): Promise<SweepResult> {
    if ((await this.epoch.check()) === 'ok') return this.promoteDue(now);
    const { more, skipped } = await this.overdue.runOnce(now);
    return { more, skipped };
  }

  private async promoteDue(now: Date): Promise<SweepResult> {
    const since = this.passFailedAtMs === null ? -1 : now.getTime() - this.passFailedAtMs; // < 0: none, or the clock stepped back
    if (since >= 0 && since < PASS_RETRY_MS) return { skipped: true };
    try {
      return { more: (await this.overdue.promoteDue(now)).more };
    } catch (err) {
      this.passFailedAtMs = now.getTime();
      throw err;
    }
  }
}
