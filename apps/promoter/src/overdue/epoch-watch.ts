import type { Sweep, SweepResult } from '../sweeps/sweep';
import type { OverdueSweep } from './overdue.sweep';
import type { RedisEpoch } from './redis-epoch';

/** How often the epoch is looked at: two small reads of Redis. */
export const EPOCH_WATCH_INTERVAL_MS = 1_000;

/**
 * Each tick, looks at Redis' epoch: when Redis lost (or may have lost) its data it runs the
 * overdue sweep's recovery at once; else the sweep's promotion pass, which queues the rows the API
 * left `scheduled` because its enqueue failed (Redis down, stalled, or cut off from the API alone)
 * within a second of Redis answering the promoter. Left to the overdue sweep's own 30 s interval,
 * the queued jobs of an emptied Redis waited up to 30 s for their new hints (chaos bench, Redis
 * restarted empty: 29.2 s past the restart in one run, 1.5 s in another, by phase), and the API's
 * rows after a restart 16–27 s. With nothing left due the pass is one probe of jobs_cold_due
 * (DUE_COLD_TENANTS_SQL) and one of the fill. It is the pass alone, not the sweep's whole run,
 * which would hint again the rows a recovery's hints still carry.
 */
export class EpochWatch implements Sweep {
  readonly name = 'epoch_watch' as const;

  constructor(
    private readonly epoch: RedisEpoch,
    private readonly overdue: OverdueSweep,
  ) {}

  async runOnce(now: Date): Promise<SweepResult> {
    if ((await this.epoch.check()) === 'ok') return { more: (await this.overdue.promoteDue(now)).more };
    const { more, skipped } = await this.overdue.runOnce(now);
    return { more, skipped };
  }
}
