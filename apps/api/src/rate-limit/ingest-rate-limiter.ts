import { Clock } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import { RateLimits, type SharedTokenBuckets } from './shared-token-buckets';

/** The smallest burst a tenant gets, so one full batch always fits in an idle bucket. */
const MIN_BURST = 1000;

/**
 * Per-tenant limit on jobs ingested per second, shared by every API replica: a request spends one
 * per job it sends, valid or not, before it is validated (a batch of n items costs n). Ingest routes
 * (`@IngestRoute()`) spend this instead of the request budget (RequestRateLimiter), never both.
 */
@Injectable()
export class IngestRateLimiter {
  private readonly buckets: SharedTokenBuckets;

  constructor(
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
    limits: RateLimits,
  ) {
    this.buckets = limits.buckets('ingest');
  }

  /** Rejects with 429 and Retry-After (whole seconds, at least 1) when the tenant is over its rate. */
  async consume(tenant: { id: number; rateLimitPerSecond: number | null }, jobs: number): Promise<void> {
    const rate = tenant.rateLimitPerSecond ?? this.settings.rateLimitPerSecond;
    if (rate <= 0 || jobs <= 0) return;
    const res = await this.buckets.take(tenant.id, jobs, rate, Math.max(rate, MIN_BURST), this.clock.now().getTime());
    if (!res.ok) throw overLimit(429, `rate limit of ${rate} jobs/s exceeded`, 'tenant', 'rate_limit', res.retryAfterMs);
  }

  /** As consume would refuse, if this replica's last take found the tenant's budget short; asks no one (SharedTokenBuckets.look). */
  assertRoom(tenant: { id: number; rateLimitPerSecond: number | null }): void {
    const rate = tenant.rateLimitPerSecond ?? this.settings.rateLimitPerSecond;
    const res = rate > 0 ? this.buckets.look(tenant.id, this.clock.now().getTime()) : { ok: true as const };
    if (!res.ok) throw overLimit(429, `rate limit of ${rate} jobs/s exceeded`, 'tenant', 'rate_limit', res.retryAfterMs);
  }
}
