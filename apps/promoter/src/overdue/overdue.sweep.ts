import { HANDOFF_WITHIN_MS, SILENT_LOGGER } from '@almanac/platform';
import type { Logger } from 'pino';
import { type QueuedCursor, type SweepJobRef, type SweepsRepository } from '@almanac/persistence';
import type { PromotionSweep } from '../sweeps/promotion.sweep';
import type { RequeueReason, SweepMetrics } from '../sweeps/sweep-metrics';
import { type Enqueuer, notAheadOfDatabase, runningFrom, type Sweep, type SweepResult } from '../sweeps/sweep';
import type { Hint } from '@almanac/domain';

/** Which of these overdue queued rows have no hint left (LostHints). */
export interface HintCheck {
  of(rows: readonly Hint[], nowMs: number): Promise<Hint[]>;
}
import type { RedisEpoch, RedisEpochStatus } from './redis-epoch';

export interface OverdueResult extends SweepResult {
  redis: RedisEpochStatus | 'unchecked';
  requeued: Record<RequeueReason, number>;
}

export interface OverdueOptions {
  /** Queued rows this late are re-enqueued (the queue should have delivered them). */
  graceMs: number;
  /** Scheduled rows in hour buckets up to hour(now + this) are promoted at once (the sweep's interval). */
  lookaheadMs: number;
  batchSize: number;
  maxPerRun: number;
}

/**
 * The one repair path for lost hints, every 30 s by default. One replica at a time (a sweep
 * lease, not a lock: nothing is held while it waits on Redis): its passes re-enqueue without
 * claiming rows, so replicas running it together would only repeat each other's `addBulk`s.
 *
 * 1. Queued rows more than `graceMs` past due (jobs_queued_due), or once Redis lost data every
 *    queued row (after a restart that kept it, those due within a hand-off: RedisEpoch), are
 *    re-hinted if they have no hint left: a row due no earlier than its flow's head may be
 *    waiting behind it in a busy pool and is left alone (LostHints), so a backlog is never copied.
 *    After a loss (marker gone) no row has a hint, so all are re-hinted: judged by heads, the
 *    rows this very recovery had already handed over (the due ones) hid every later one, which
 *    then waited for the grace (all run 88 s after a FLUSHALL, not 36 s).
 *    Sent as repairs: at hand-off a row older than its flow's head goes to the head.
 * 2. Scheduled rows in the hour buckets up to hour(now + `lookaheadMs`), i.e. due within the
 *    current hour or already due (left cold when Redis was down at ingest, or by a crashed
 *    promotion) → promoted now rather than at the next hourly promotion. Whole buckets, like
 *    promotion, so the claim stays an index range scan on jobs_cold_due.
 * Running rows whose worker is gone are the rescue sweep's.
 */
export class OverdueSweep implements Sweep<OverdueResult> {
  readonly name = 'overdue' as const;
  /**
   * Where the last run's scan of overdue rows stopped when it hit maxPerRun: the next run goes
   * on from there. (Starting from the oldest every time, a backlog larger than one run was
   * re-enqueued from its head again and again and its tail never reached.)
   */
  private overdueCursor: QueuedCursor | null = null;
  private running: Promise<OverdueResult> | null = null;

  constructor(
    private readonly repo: SweepsRepository,
    private readonly queue: Enqueuer,
    private readonly hints: HintCheck,
    private readonly epoch: RedisEpoch,
    private readonly promotion: PromotionSweep,
    private readonly opts: OverdueOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {}

  /**
   * A run's last pass alone: the cold rows due within the look-ahead, queued batch after batch on
   * one lane, up to the promotion's maxPerRun (rows the API left `scheduled` when its enqueue
   * failed). Claimed with SKIP LOCKED, so no lease.
   */
  async promoteDue(now: Date): Promise<{ promoted: number; more: boolean }> {
    const late = await this.promotion.promote(now, new Date(now.getTime() + this.opts.lookaheadMs), 1);
    this.metrics?.requeued.inc({ reason: 'scheduled_due' }, late.promoted);
    return { promoted: late.promoted, more: late.more === true };
  }

  /** One run under the sweep's lease; a caller arriving during a run (the epoch watch) shares it. */
  runOnce(now: Date): Promise<OverdueResult> {
    this.running ??= this.leasedRun(now).finally(() => (this.running = null));
    return this.running;
  }

  private async leasedRun(now: Date): Promise<OverdueResult> {
    const result = await this.repo.withSweepLease('overdue', (lost) => this.sweep(now, lost));
    return result ?? { skipped: true, redis: 'unchecked', requeued: emptyCounts() };
  }

  /** `lost`: the lease's renewal failed; another replica may be sweeping, so stop between batches. */
  private async sweep(now: Date, lost: AbortSignal): Promise<OverdueResult> {
    const at = runningFrom(now); // a scan of 200,000 rows takes seconds: each repair's delays from its own time
    const requeued = emptyCounts();
    let more = false;

    const redis = await this.epoch.check();
    if (redis === 'ok') {
      const scan = await this.requeueQueued(at, await this.dueBy(now, -this.opts.graceMs), this.opts.maxPerRun, 'overdue', this.overdueCursor, lost);
      requeued.overdue = scan.requeued;
      this.overdueCursor = scan.next;
      more ||= scan.next !== null;
    } else {
      // A recovery larger than a run goes on where the last run stopped, whichever replica runs
      // next: from the start every time (a restart, a failure), one larger than a run never ended.
      // Its marker says what began it: a restart's rows are judged by their hints all along (allLost copied every hint that survived).
      const resumed = await this.epoch.resume();
      const epoch = resumed?.epoch ?? (await this.epoch.begin(redis));
      const found = resumed?.found ?? redis;
      // A restart kept the hot queue, where the hints of rows due later than a hand-off wait: judged
      // by their pools' heads (LostHints), each would count as lost and be copied. So only the rows
      // a dispatcher may have handed over are judged. A failover to a replica that lost the last
      // writes lost some later rows' hints too: the overdue pass re-hints those once past their grace.
      const dueBefore = found === 'lost' ? null : await this.dueBy(now, HANDOFF_WITHIN_MS);
      const scan = await this.requeueQueued(at, dueBefore, this.opts.maxPerRun, 'redis_lost', resumed?.after ?? null, lost, found === 'lost');
      requeued.redis_lost = scan.requeued;
      // A second loss during the scan leaves the marker missing: the next run starts over.
      more ||= scan.next !== null || lost.aborted || !(await this.epoch.finish(epoch)); // a scan cut short has not ended
      if (scan.next) await this.epoch.progress(epoch, scan.next);
      const what = `${found === 'lost' ? 'Redis lost its data (or is new)' : 'Redis was restarted or replaced'}${resumed ? ', recovery going on' : ''}`;
      if (requeued.redis_lost > 0) this.log.warn({ redis, requeued: requeued.redis_lost, more: scan.next !== null }, `${what}: re-enqueued ${requeued.redis_lost} queued jobs`);
      // A brand-new installation has no marker either: with nothing queued, nothing was lost.
      else if (!lost.aborted) this.log.info({ redis }, `${what}: no job was queued, marker written`);
    }

    if (lost.aborted) {
      this.log.warn({ requeued }, 'overdue sweep lost its lease (renewal failed): stopped');
      return { redis, requeued, more };
    }
    const late = await this.promoteDue(at()); // after the scan above, which can take seconds
    requeued.scheduled_due = late.promoted;
    more ||= late.more;

    if (requeued.overdue > 0) this.log.warn({ requeued }, 'overdue sweep re-hinted queued jobs whose hints were lost');
    return { redis, requeued, more };
  }

  /** `now` moved by `offsetMs`, never ahead of the database's clock, by which run_at is written (a host 60 s fast re-hinted rows not due yet). */
  private async dueBy(now: Date, offsetMs: number): Promise<Date> {
    return new Date(notAheadOfDatabase(now, await this.repo.databaseNowMs()).getTime() + offsetMs);
  }

  private async requeueQueued(
    at: () => Date, dueBefore: Date | null, max: number, reason: RequeueReason, from: QueuedCursor | null, lost: AbortSignal, allLost = false,
  ): Promise<{ requeued: number; next: QueuedCursor | null }> {
    let requeued = 0;
    const scan = await this.repo.scanQueued(dueBefore, this.opts.batchSize, max, async (rows) => {
      requeued += await this.repair(rows, at(), reason, allLost);
    }, from, lost);
    return { requeued, next: scan.next };
  }

  /** Re-hints the rows among `rows` that have no hint left (all of them when `allLost`); returns how many. */
  private async repair(rows: SweepJobRef[], now: Date, reason: RequeueReason, allLost: boolean): Promise<number> {
    const lost = allLost ? rows : await this.hints.of(rows, now.getTime());
    if (lost.length === 0) return 0;
    await this.queue.enqueue(lost, now, { repair: true });
    this.metrics?.requeued.inc({ reason }, lost.length);
    return lost.length;
  }
}

function emptyCounts(): Record<RequeueReason, number> {
  return { overdue: 0, worker_lost: 0, redis_lost: 0, scheduled_due: 0 };
}
