import { randomInt } from 'node:crypto';
import type { DeliveryMetrics } from '@almanac/delivery';
import type { ExecutionRepository, RunnableJob } from '@almanac/persistence';
import { Clock, HotQueue, MicroBatcher } from '@almanac/platform';
import type { Logger } from 'pino';

/** A row due up to this much later still counts as due (clock skew between hosts). */
export const CLAIM_EARLY_MS = 1000;

export interface ClaimerOptions {
  repo: ExecutionRepository;
  hotQueue: HotQueue;
  clock: Clock;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** Lease a claim starts with; the worker's heartbeat extends it while the handler runs. */
  leaseMs: number;
  maxBatch: number;
  /** After a failed claim (Postgres down), the pause before it is undone and given back (default 1 s). */
  claimRetryPauseMs?: number;
}

/**
 * The claim a handler start makes (queued → running, attempt + 1, lease), batched: the starts
 * of one tick share one UPDATE, which also returns the rows to run. A delivery whose row moved
 * on is answered `undefined`; a row rescheduled to later goes back on the hot queue for its new
 * time. (If the dispatcher has not yet removed the copy that delivered it early, that add is
 * ignored and the overdue sweep delivers the row: late by up to its grace.)
 */
export class Claimer {
  private readonly batcher: MicroBatcher<string, RunnableJob | undefined>;
  /** Ids in a claim now (two batches may be in flight): a second delivery of one is a duplicate. */
  private readonly claiming = new Set<string>();
  /**
   * This worker's claims set leases of leaseMs plus a fixed 0-999 ms of its own, so the lease a
   * claim set identifies it: an undo (unclaim) never matches another worker's claim of the same
   * row in the same millisecond (found in review).
   */
  private readonly leaseMs: number;

  constructor(private readonly o: ClaimerOptions) {
    this.leaseMs = o.leaseMs + randomInt(1000);
    this.batcher = new MicroBatcher((ids) => this.claim(ids), { maxBatch: o.maxBatch, maxInFlight: 2 });
  }

  submit(id: string): Promise<RunnableJob | undefined> {
    return this.batcher.submit(id);
  }

  async drain(): Promise<void> {
    await this.batcher.drain();
    await Promise.all([...this.explaining]);
  }

  private async claim(ids: string[]): Promise<(RunnableJob | undefined)[]> {
    const { clock, metrics } = this.o;
    const now = clock.now();
    const unique = [...new Set(ids)].filter((id) => !this.claiming.has(id));
    for (const id of unique) this.claiming.add(id);
    let rows: RunnableJob[];
    try {
      rows = await this.claimOrUndo(unique, now);
    } finally {
      for (const id of unique) this.claiming.delete(id);
    }
    const byId = new Map(rows.map((r) => [r.id, r]));
    const unclaimed = unique.filter((id) => !byId.has(id));
    // The claimed rows start now: explaining the others (a read, maybe a hot-queue add) must not
    // hold back handlers whose leases are already running.
    if (unclaimed.length > 0) this.track(this.explain(unclaimed, now));
    const duplicates = ids.length - unique.length;
    if (duplicates > 0) metrics.dropped.inc({ reason: 'duplicate' }, duplicates);
    // Two deliveries of one row in one batch (or one already in the other batch in flight): the
    // first runs it, the other is a duplicate.
    return ids.map((id) => {
      const row = byId.get(id);
      byId.delete(id);
      return row;
    });
  }

  /**
   * A claim that failed may still have committed (its reply was lost). After a pause (holding
   * the slots, so a dead database is not spun on) the rows it may have taken are put back,
   * recognised by the lease it set, before the caller gives the deliveries back: otherwise the
   * next delivery found them running and was dropped, and they waited for the lease rescue (a
   * `maxAttempts: 1` job died without running). If Postgres is still away, the lease rescue
   * remains the net.
   */
  private async claimOrUndo(ids: string[], now: Date): Promise<RunnableJob[]> {
    try {
      // In id order, the order a bulk operation's chunk locks its rows in: two statements that
      // lock overlapping rows in one order cannot deadlock each other.
      return await this.o.repo.claimForRun([...ids].sort(byIdOrder), now, CLAIM_EARLY_MS, this.leaseMs);
    } catch (err) {
      await new Promise((r) => setTimeout(r, this.o.claimRetryPauseMs ?? 1000));
      await this.o.repo.unclaim(ids, now, this.leaseMs).catch((undoErr: unknown) =>
        this.o.logger.warn({ err: undoErr, jobs: ids.length }, 'could not undo a failed claim; the lease rescue will'));
      throw err;
    }
  }

  private readonly explaining = new Set<Promise<void>>();

  private track(work: Promise<void>): void {
    const p = work.catch((err: unknown) => this.o.logger.warn({ err }, 'could not explain unclaimed deliveries'));
    this.explaining.add(p);
    void p.finally(() => this.explaining.delete(p));
  }

  /** Counts why each id was not claimed; rows moved to later go back on the hot queue. */
  private async explain(ids: string[], now: Date): Promise<void> {
    for (const u of await this.o.repo.explainUnclaimed(ids, now, CLAIM_EARLY_MS)) {
      this.o.metrics.dropped.inc({ reason: u.reason });
      if (u.reason !== 'not_due' || !u.runAt) continue;
      try {
        await this.o.hotQueue.enqueue([{ id: u.id, runAt: u.runAt, tenantId: u.tenantId ?? 0, kind: u.kind ?? '' }], now);
      } catch (err) {
        this.o.logger.error({ err, jobId: u.id }, 'could not put an early delivery back; the overdue sweep will');
      }
    }
  }
}

/** Numeric order of decimal id strings (no leading zeros): shorter is smaller. */
function byIdOrder(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
