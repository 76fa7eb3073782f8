import { LOST_ATTEMPT_ERROR } from '@almanac/domain';
import { SILENT_LOGGER } from '@almanac/platform';
import type { Logger } from 'pino';
import { type QueuedCursor, type SweepJobRef, type SweepsRepository } from '@almanac/persistence';
import { hostname } from 'node:os';
import type { PromotionSweep } from '../sweeps/promotion.sweep';
import type { RequeueReason, SweepMetrics } from '../sweeps/sweep-metrics';
import type { OverdueEnqueuer, Sweep, SweepResult } from '../sweeps/sweep';
import type { RedisEpoch, RedisEpochStatus } from './redis-epoch';

export interface OverdueResult extends SweepResult {
  redis: RedisEpochStatus | 'unchecked';
  requeued: Record<RequeueReason, number>;
  /** Running rows whose lease expired on their last attempt: now dead. */
  dead: number;
}

export interface OverdueOptions {
  /** Queued rows this late are re-enqueued (the queue should have delivered them). */
  graceMs: number;
  /** Scheduled rows in hour buckets up to hour(now + this) are promoted at once (the sweep's interval). */
  lookaheadMs: number;
  batchSize: number;
  maxPerRun: number;
}

/** Error text stored on rows whose lease ran out: the delivery side's wording for a lost attempt. */
export const LEASE_EXPIRED_ERROR = LOST_ATTEMPT_ERROR;

/**
 * The net under the queue, every 30 s by default. One replica at a time (a sweep lease, not a
 * lock: nothing is held while it waits on Redis): its passes re-enqueue without claiming rows, so
 * replicas running it together would only repeat each other's `addBulk`s.
 *
 * 1. Redis lost data (RedisEpoch) → every queued row is re-enqueued at once with its own delay,
 *    in batches (`addBulk` per batch; ids still in Redis are no-ops). Otherwise queued rows
 *    more than `graceMs` past due are re-enqueued (jobs_queued_due).
 * 2. Running rows with an expired lease (jobs_running_lease) → queued and re-enqueued, or dead
 *    when that was the last attempt. The attempt was counted by the worker's claim.
 * 3. Scheduled rows in the hour buckets up to hour(now + `lookaheadMs`), i.e. due within the
 *    current hour or already due (left cold when Redis was down at ingest, or by a crashed
 *    promotion) → promoted now rather than at the next hourly promotion. Whole buckets, like
 *    promotion, so the claim stays an index range scan on jobs_cold_due.
 */
export class OverdueSweep implements Sweep<OverdueResult> {
  readonly name = 'overdue' as const;
  /**
   * Where the last run's scan of overdue rows stopped when it hit maxPerRun: the next run goes
   * on from there. (Starting from the oldest every time, a backlog larger than one run was
   * re-enqueued from its head again and again and its tail never reached.)
   */
  private overdueCursor: QueuedCursor | null = null;
  /**
   * This replica's name on the sweep lease: its pod (host name) and process. A container
   * restarted in the same pod keeps both (pid 1), so it takes its own lease back at once.
   */
  private readonly holder = `${hostname()}:${process.pid}`;

  constructor(
    private readonly repo: SweepsRepository,
    private readonly queue: OverdueEnqueuer,
    private readonly epoch: RedisEpoch,
    private readonly promotion: PromotionSweep,
    private readonly opts: OverdueOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  async runOnce(now: Date): Promise<OverdueResult> {
    const result = await this.repo.withSweepLease('overdue', this.holder, () => this.sweep(now));
    return result ?? { skipped: true, redis: 'unchecked', requeued: emptyCounts(), dead: 0 };
  }

  private async sweep(now: Date): Promise<OverdueResult> {
    const requeued = emptyCounts();
    let more = false;

    const redis = await this.epoch.check();
    if (redis === 'ok') {
      const dueBefore = new Date(now.getTime() - this.opts.graceMs);
      const scan = await this.requeueQueued(now, dueBefore, this.opts.maxPerRun, 'overdue', this.overdueCursor);
      requeued.overdue = scan.seen;
      this.overdueCursor = scan.next;
      more ||= scan.next !== null;
    } else {
      const epoch = await this.epoch.begin();
      requeued.redis_lost = (await this.requeueQueued(now, null, Number.MAX_SAFE_INTEGER, 'redis_lost', null)).seen;
      // A second loss during the scan leaves the marker missing: the next run starts over.
      more ||= !(await this.epoch.finish(epoch));
      const what = redis === 'lost' ? 'Redis lost its data (or is new)' : 'Redis was restarted or replaced';
      if (requeued.redis_lost > 0) this.log.warn({ redis, requeued: requeued.redis_lost }, `${what}: re-enqueued ${requeued.redis_lost} queued jobs`);
      // A brand-new installation has no marker either: with nothing queued, nothing was lost.
      else this.log.info({ redis }, `${what}: no job was queued, marker written`);
    }

    let dead = 0;
    for (;;) {
      const rescue = await this.repo.rescueExpiredLeases(now, this.opts.batchSize, LEASE_EXPIRED_ERROR);
      await this.enqueue(rescue.requeued, now, 'lease_expired', requeued);
      dead += rescue.dead;
      this.metrics?.leaseDead.inc(rescue.dead);
      if (rescue.requeued.length + rescue.dead < this.opts.batchSize) break;
    }

    const late = await this.promotion.promote(now, new Date(now.getTime() + this.opts.lookaheadMs), 1);
    requeued.scheduled_due = late.promoted;
    this.metrics?.requeued.inc({ reason: 'scheduled_due' }, late.promoted);
    more ||= late.more === true;

    if (requeued.overdue + requeued.lease_expired + dead > 0) {
      this.log.warn({ requeued, dead }, 'overdue sweep found jobs the queue or a worker had lost');
    }
    return { redis, requeued, dead, more };
  }

  private async requeueQueued(
    now: Date, dueBefore: Date | null, max: number, reason: RequeueReason, from: QueuedCursor | null,
  ): Promise<{ seen: number; next: QueuedCursor | null }> {
    return this.repo.scanQueued(dueBefore, this.opts.batchSize, max, (rows) => this.enqueue(rows, now, reason, emptyCounts()), from);
  }

  private async enqueue(rows: SweepJobRef[], now: Date, reason: RequeueReason, counts: Record<RequeueReason, number>) {
    if (rows.length === 0) return;
    await this.queue.enqueue(rows, now);
    // Overdue rows whose queue copy sits delayed for a later time (moved earlier while Redis
    // was unreachable): the add above was a no-op for them, so make that copy run now.
    if (reason === 'overdue') await this.queue.expedite(rows.map((r) => r.id));
    counts[reason] += rows.length;
    this.metrics?.requeued.inc({ reason }, rows.length);
  }
}

function emptyCounts(): Record<RequeueReason, number> {
  return { overdue: 0, lease_expired: 0, redis_lost: 0, scheduled_due: 0 };
}
