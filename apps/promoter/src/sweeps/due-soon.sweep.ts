import { dueByWindow, type DueWindowLabel, LONGEST_DUE_WINDOW_MS } from '@almanac/domain';
import type { DueSoonRepository } from '@almanac/persistence';
import type { SweepMetrics } from './sweep-metrics';
import type { Sweep, SweepResult } from './sweep';

/** As often as KEDA polls (pollingInterval 15 s) and Prometheus scrapes. */
export const DUE_SOON_INTERVAL_MS = 15_000;

export interface DueSoonResult extends SweepResult {
  byPool: Map<string, Record<DueWindowLabel, number>>;
  /** a state's rows reached the cap: the counts are lower bounds */
  truncated: boolean;
}

/**
 * `almanac_jobs_due{pool, within}`: the work each pool will have within 1 minute to 1 hour,
 * cold rows included (issue 19). Almanac holds its future, so the workers' ScaledObject can ask
 * for replicas before a spike rather than after it is late. Every replica may run it; it only
 * reads, at most `maxRows` rows per state (k8s/worker/scaledobject.yaml uses it; beyond the cap
 * the pool is far past maxReplicas anyway).
 */
export class DueSoonSweep implements Sweep<DueSoonResult> {
  readonly name = 'due_soon' as const;

  constructor(
    private readonly repo: DueSoonRepository,
    private readonly maxRows: number,
    private readonly metrics?: SweepMetrics,
  ) {}

  async runOnce(now: Date): Promise<DueSoonResult> {
    const scan = await this.repo.byPoolAndMinute(now, new Date(now.getTime() + LONGEST_DUE_WINDOW_MS), this.maxRows);
    const byPool = dueByWindow(scan.minutes);
    this.metrics?.setJobsDue(byPool);
    return { byPool, truncated: scan.truncated };
  }
}
