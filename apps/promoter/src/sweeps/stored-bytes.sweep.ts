import type { TenantStatsRepository } from '@almanac/persistence';
import type { SweepMetrics } from './sweep-metrics';
import type { Sweep, SweepResult } from './sweep';

export interface StoredBytesOptions {
  /** Rows one run reads (ALMANAC_STORED_BYTES_SCAN_ROWS): at 10,000 a second, 10 M jobs take a pass of about 17 minutes. */
  rowsPerRun: number;
  /** Tenants with a series of their own in almanac_tenant_stored_bytes. */
  top: number;
}

export interface StoredBytesResult extends SweepResult {
  published: boolean;
}

/** How often a replica re-reads the figures for its gauge when it did not publish them itself. */
const GAUGE_REFRESH_MS = 60_000;

/**
 * Measures what each tenant stores, for its quota (tenants.stored_bytes, read by ingest): one
 * bounded step of a pass over every job, schedule and stored schedule payload per run
 * (statements/measure-stored-bytes.sql.ts). Every replica may run it; the pass's cursor keeps
 * two replicas from counting a chunk twice.
 */
export class StoredBytesSweep implements Sweep<StoredBytesResult> {
  readonly name = 'stored_bytes' as const;
  private gaugeAt = -Infinity;

  constructor(
    private readonly repo: TenantStatsRepository,
    private readonly o: StoredBytesOptions,
    private readonly metrics?: SweepMetrics,
  ) {}

  async runOnce(now: Date): Promise<StoredBytesResult> {
    const { published } = await this.repo.measureStoredBytes(this.o.rowsPerRun);
    if (this.metrics && (published || now.getTime() - this.gaugeAt >= GAUGE_REFRESH_MS)) {
      const { top, otherBytes } = await this.repo.storedBytes(this.o.top);
      this.metrics.setTenantStoredBytes(top, otherBytes);
      this.gaugeAt = now.getTime();
    }
    return { published };
  }
}
