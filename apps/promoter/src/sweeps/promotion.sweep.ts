import { setAsideError } from '@almanac/domain';
import type { SweepJobRef, SweepsRepository } from '@almanac/persistence';
import { isValueError, runIsolated, SILENT_LOGGER } from '@almanac/platform';
import type { Logger } from 'pino';
import { runBatches } from './batch-loop';
import type { SweepMetrics } from './sweep-metrics';
import { type Enqueuer, runningFrom, type Sweep, type SweepResult } from './sweep';

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
 * Test seams for the crash points: a throw from `afterClaim` is a crash once the rows are
 * committed as queued but before they reach Redis; from `afterEnqueue`, a crash once both are
 * done.
 */
export interface PromotionFaults {
  afterClaim?: (rows: SweepJobRef[]) => void | Promise<void>;
  afterEnqueue?: (rows: SweepJobRef[]) => void | Promise<void>;
}

/**
 * Cold rows → hot queue. Each batch claims its rows (FOR UPDATE SKIP LOCKED) and marks them
 * queued in one short transaction, then publishes them with `addBulk`. Nothing is held while
 * Redis answers (it may take up to its command timeout), and every crash point is safe:
 * - the publish fails (Redis down or slow): the rows go back to scheduled (guarded on queued and
 *   run time, as ingest does), and the next run, 5 s later after a failure, publishes them again.
 *   A hint that did reach Redis meanwhile is harmless: the worker's claim finds the row
 *   scheduled and drops it, or the re-add of the same envelope is a no-op.
 * - the process dies after the commit, before or during the publish: the rows are queued without
 *   a queue copy, and the overdue sweep re-enqueues them once they are `overdueGraceMs` past due
 *   (the same net as a queue that lost a job).
 * - after the publish: done.
 * Rows already overdue (the promoter was down) go out with delay 0 (HotQueue clamps it).
 *
 * The claim takes whole UTC hour buckets, ≤ hour(now + hot horizon), earliest first: the
 * horizon is effectively rounded UP to the next hour boundary, so Redis holds up to
 * horizon + 1 h of work. Inside the earliest due bucket each batch is shared between the
 * tenants with rows there (SweepsRepository.promoteColdBatch), so a tenant's millions of rows
 * in one hour do not hold back another tenant's row in that hour when the promoter catches up.
 * The scans touch only unpromoted rows, so their cost follows the rows promoted, not the table.
 */
export class PromotionSweep implements Sweep<PromotionResult> {
  readonly name = 'promotion' as const;

  constructor(
    private readonly repo: SweepsRepository,
    private readonly queue: Enqueuer,
    private readonly opts: PromotionOptions,
    private readonly metrics?: SweepMetrics,
    private readonly faults: PromotionFaults = {},
    private readonly log: Logger = SILENT_LOGGER,
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
    // Once per run: a tenant whose rows fall due during the run is not in the share, but the
    // batch's fill (hour order) still promotes them.
    const at = runningFrom(now); // a run of a million rows takes seconds: each batch's delays from its own time
    const tenants = await this.repo.dueColdTenants(horizon);
    if (tenants.length === 0) return { promoted: 0, batches: 0 }; // nothing due: the epoch watch's pass each second is this one probe
    const run = await runBatches({ ...this.opts, concurrency: lanes }, async (limit) => {
      const rows = await this.repo.promoteColdBatch(horizon, limit, tenants).catch((err: unknown) => {
        if (!isValueError(err)) throw err;
        return this.promoteIsolated(horizon, limit, now);
      });
      if (rows.length === 0) return 0;
      await this.faults.afterClaim?.(rows);
      await this.publish(rows, at());
      await this.faults.afterEnqueue?.(rows);
      this.metrics?.promoted.inc(rows.length);
      return rows.length;
    });
    return run.more ? { promoted: run.total, batches: run.batches, more: true } : { promoted: run.total, batches: run.batches };
  }

  /**
   * A batch Postgres refused on a value of one row failed for every tenant's rows in it, and the
   * next batch picked the same rows: promotion stopped for everyone. The batch's rows are promoted
   * by tenant, then in halves, down to the row that fails alone, which is set aside (dead,
   * setAsideError); the rest go on.
   */
  private async promoteIsolated(horizon: Date, limit: number, now: Date): Promise<SweepJobRef[]> {
    const promoted: SweepJobRef[] = [];
    await runIsolated(await this.repo.coldCandidates(horizon, limit), {
      run: async (rows) => void promoted.push(...(await this.repo.promoteIds(rows.map((r) => r.id)))),
      isValueError,
      groupOf: (r) => r.tenantId,
      setAside: async (r, err) => {
        const code = String((err as { code?: unknown }).code);
        this.metrics?.setAside.inc({ statement: 'promotion' });
        this.log.error({ err, jobId: r.id, tenantId: r.tenantId }, 'promotion refused by Postgres on a value of this job; set aside (dead) so the rows batched with it go on');
        await this.repo.setAside(r.id, setAsideError('promotion', code), now);
      },
    });
    return promoted;
  }

  private async publish(rows: SweepJobRef[], now: Date): Promise<void> {
    try {
      await this.queue.enqueue(rows, now);
    } catch (err) {
      // If this fails too (Postgres down as well), the rows stay queued for the overdue sweep.
      await this.repo.demoteToScheduled(rows.map((h) => ({ id: h.id, runAt: new Date(h.dueMs) }))).catch(() => undefined);
      throw err;
    }
  }
}
