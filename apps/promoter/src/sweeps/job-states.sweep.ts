import type { JobStateCounts, SweepsRepository } from '@almanac/persistence';
import type { SweepMetrics } from './sweep-metrics';
import type { Sweep, SweepResult } from './sweep';

export interface JobStatesResult extends SweepResult {
  counts: JobStateCounts;
}

/**
 * Refreshes `almanac_jobs{state}` on an interval instead of on every scrape: queued/running
 * counted over their partial indexes up to 100,000 each, planner estimates for the rest and past
 * that (see SweepsRepository.estimateJobStates). Every replica may run it; it only reads.
 */
export class JobStatesSweep implements Sweep<JobStatesResult> {
  readonly name = 'job_states' as const;

  constructor(
    private readonly repo: SweepsRepository,
    private readonly metrics?: SweepMetrics,
  ) {}

  async runOnce(_now: Date): Promise<JobStatesResult> {
    const counts = await this.repo.estimateJobStates();
    this.metrics?.setJobStates(counts);
    return { counts };
  }
}
