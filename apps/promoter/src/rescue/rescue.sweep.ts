import { type Hint, HeartbeatWatch, LOST_ATTEMPT_ERROR } from '@almanac/domain';
import type { ReadyQueues } from '@almanac/delivery';
import type { SweepsRepository, WorkerRow, WorkersRepository } from '@almanac/persistence';
import { SILENT_LOGGER, WORKER_DEAD_AFTER_MS, WORKER_RESCUE_INTERVAL_MS } from '@almanac/platform';
import type { Logger } from 'pino';
import type { SweepMetrics } from '../sweeps/sweep-metrics';
import { type Enqueuer, notAheadOfDatabase, type Sweep, type SweepResult } from '../sweeps/sweep';

export interface RescueResult extends SweepResult {
  /** Workers found dead this run. */
  workers: number;
  /** Running rows put back to queued. */
  requeued: number;
  /** Running rows whose lost attempt was their last: now dead. */
  dead: number;
}

/** A watch with a gap longer than this (three looks) starts over: nobody could beat meanwhile. */
const MAX_WATCH_GAP_MS = 3 * WORKER_RESCUE_INTERVAL_MS;

export interface RescueOptions {
  /** Rows per rescue statement. */
  batchSize: number;
  /** Who is dead (default: HeartbeatWatch over WORKER_DEAD_AFTER_MS). */
  watch?: Pick<HeartbeatWatch, 'look'>;
}

/**
 * Puts back the work of workers that are gone, every second on every promoter replica (each
 * step is safe to run twice). A worker is dead when its heartbeat (its row in `workers`, by the
 * database's clock) has not moved for WORKER_DEAD_AFTER_MS under this replica's unbroken watch
 * (HeartbeatWatch). Then:
 * 1. its running rows, and any whose lease ran out (a backstop for a worker whose beats go on
 *    while a run is lost), go back to queued with a `lost` history row, or dead on their last
 *    attempt (one statement, SKIP LOCKED);
 * 2. every hint it held in Redis (taken, claimed or running, or run and not reported done yet:
 *    those claims find their rows moved on) goes back to the head of its flow;
 * 3. rows from step 1 that were in no taken hash get a hint through the hot queue;
 * 4. its row is deleted, unless it beat meanwhile.
 * Postgres first: a hint back in its pool finds its row queued.
 */
export class RescueSweep implements Sweep<RescueResult> {
  readonly name = 'rescue' as const;
  private readonly watch: Pick<HeartbeatWatch, 'look'>;
  /**
   * Rows put back to queued whose hints a failed run could not send (Redis refusing, slow): sent
   * by the next run. Their rows are queued already, so no later run finds them running again;
   * they waited for the overdue sweep's grace (30-60 s).
   */
  private unhinted: Hint[] = [];

  constructor(
    private readonly workers: WorkersRepository,
    private readonly repo: SweepsRepository,
    private readonly ready: ReadyQueues,
    private readonly queue: Enqueuer,
    private readonly opts: RescueOptions,
    private readonly metrics?: SweepMetrics,
    private readonly log: Logger = SILENT_LOGGER,
  ) {
    this.watch = opts.watch ?? new HeartbeatWatch(WORKER_DEAD_AFTER_MS, MAX_WATCH_GAP_MS);
  }

  async runOnce(now: Date): Promise<RescueResult> {
    const view = await this.workers.list();
    const deadIds = new Set(this.watch.look(view.workers, view.dbNowMs));
    // Leases are written by the database's clock (the workers' DatabaseClock): a promoter host
    // running ahead must not find live runs' leases out.
    return this.putBack(view.workers.filter((w) => deadIds.has(w.id)), notAheadOfDatabase(now, view.dbNowMs));
  }

  /** Steps 1-4 for workers found dead (and any running row whose lease ran out before `now`). */
  async putBack(gone: readonly WorkerRow[], now: Date): Promise<RescueResult> {
    const requeued: Hint[] = [];
    let dead = 0;
    for (;;) {
      const r = await this.repo.rescueRunning(now, this.opts.batchSize, LOST_ATTEMPT_ERROR, gone.map((w) => w.id));
      requeued.push(...r.requeued);
      this.unhinted.push(...r.requeued); // each batch commits on its own: a later one failing must not lose its hints
      dead += r.dead;
      // Counted as the statement commits: a run failing later (Redis) has moved these rows all the same.
      this.metrics?.requeued.inc({ reason: 'worker_lost' }, r.requeued.length);
      this.metrics?.leaseDead.inc(r.dead);
      if (r.requeued.length + r.dead < this.opts.batchSize) break;
    }
    const givenBack = new Set<string>();
    for (const w of gone) for (const pool of w.pools) for (const id of await this.ready.giveBack(pool, String(w.id), 'all')) givenBack.add(id);
    await this.queue.enqueue(this.unhinted.filter((h) => !givenBack.has(h.id)), now);
    this.unhinted = [];
    for (const w of gone) await this.workers.remove(w.id, w.beatAtMs);
    if (gone.length + requeued.length + dead > 0) {
      this.log.warn({ workers: gone.map((w) => w.name), requeued: requeued.length, dead, hints: givenBack.size }, 'put back the work of workers that are gone');
    }
    return { workers: gone.length, requeued: requeued.length, dead };
  }
}
