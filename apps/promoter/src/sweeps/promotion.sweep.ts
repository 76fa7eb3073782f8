import type { SweepJobRef, SweepsRepository } from '@almanac/persistence';
import { runBatches } from './batch-loop';
import type { SweepMetrics } from './sweep-metrics';
import type { Enqueuer, Sweep, SweepResult } from './sweep';

export interface PromotionResult extends SweepResult {
  promoted: number;
  batches: number;
}

export interface PromotionOptions {
  hotHorizonMs: number;
  batchSize: number;
  maxPerRun: number;
  /** Parallel batch lanes (see runBatches); 1 = strictly one batch at a time. */
  concurrency: number;
}

/**
 * Test seams for the crash points: a throw from `afterEnqueue` is a crash after the rows reached
 * Redis but before the commit; from `afterCommit`, a crash once both are done.
 */
export interface PromotionFaults {
  afterEnqueue?: (rows: SweepJobRef[]) => void | Promise<void>;
  afterCommit?: (rows: number) => void | Promise<void>;
}

/**
 * Cold rows → hot queue. Each batch is one transaction: claim (FOR UPDATE SKIP LOCKED) and mark
 * queued, `addBulk` to the hot queue, commit. The order makes every crash point safe:
 * - before the commit (after or during enqueue): the rows stay scheduled. If the next claim
 *   comes first, it adds the same `j-<id>` again, a no-op while the job waits in Redis. If the
 *   queued copy comes due first, the dispatcher finds the row still scheduled, does not claim it
 *   (`rescheduled`) and drops the delivery; the next claim re-adds it. Never lost, never twice.
 * - after the commit: rows are queued and in Redis, done.
 * Rows already overdue (the promoter was down) go out with delay 0 (HotQueue clamps it).
 *
 * The claim walks jobs_cold_due by whole UTC hour buckets, ≤ hour(now + hot horizon): the
 * horizon is effectively rounded UP to the next hour boundary, so Redis holds up to
 * horizon + 1 h of work. The scan touches only unpromoted rows, so its cost follows the rows it
 * promotes, not the table size.
 */
export class PromotionSweep implements Sweep<PromotionResult> {
  readonly name = 'promotion' as const;

  constructor(
    private readonly repo: SweepsRepository,
    private readonly queue: Enqueuer,
    private readonly opts: PromotionOptions,
    private readonly metrics?: SweepMetrics,
    private readonly faults: PromotionFaults = {},
  ) {}

  runOnce(now: Date): Promise<PromotionResult> {
    return this.promote(now, new Date(now.getTime() + this.opts.hotHorizonMs));
  }

  /**
   * Promotes rows in hour buckets ≤ hour(horizon), batching until one comes back short. The
   * overdue sweep calls it with horizon = now + its interval on one lane: the current hour's
   * bucket, which promotion has normally emptied already.
   */
  async promote(now: Date, horizon: Date, lanes = this.opts.concurrency): Promise<PromotionResult> {
    const run = await runBatches({ ...this.opts, concurrency: lanes }, async (limit) => {
      const n = await this.repo.promoteColdBatch(horizon, limit, async (rows) => {
        await this.queue.enqueue(rows, now);
        await this.faults.afterEnqueue?.(rows);
      });
      await this.faults.afterCommit?.(n);
      this.metrics?.promoted.inc(n);
      return n;
    });
    return run.more ? { promoted: run.total, batches: run.batches, more: true } : { promoted: run.total, batches: run.batches };
  }
}
