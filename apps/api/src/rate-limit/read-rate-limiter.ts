import type { TenantRecord } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { from, type Observable, switchMap } from 'rxjs';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import { RateLimits, type SharedTokenBuckets } from './shared-token-buckets';

/**
 * Per-tenant limit on read requests (GET and HEAD on tenant routes) per second, shared by every
 * API replica: a tenant polling its jobs in a tight loop cannot take the database from the others.
 * 429 with Retry-After, naming the limit; a burst of one second's worth is allowed.
 */
@Injectable()
export class ReadRateLimiter implements NestInterceptor {
  private readonly buckets: SharedTokenBuckets;

  constructor(
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
    limits: RateLimits,
  ) {
    this.buckets = limits.buckets('read');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<FastifyRequest & { tenant?: TenantRecord }>();
    // HEAD runs the GET handler (Fastify exposes one for every GET route): it costs the same.
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !req.tenant) return next.handle();
    return from(this.take(req.tenant.id, 1)).pipe(switchMap(() => next.handle()));
  }

  /**
   * Spends `cost` reads of the tenant's budget or rejects with 429 and Retry-After. The console calls
   * it once it knows whose page it draws (its session is a cookie, read after this interceptor),
   * so a tenant's pages and its API reads share one budget.
   */
  async take(tenantId: number, cost: number): Promise<void> {
    const rate = this.settings.readRateLimitPerSecond;
    if (rate <= 0) return;
    const res = await this.buckets.take(tenantId, cost, rate, rate, this.clock.now().getTime());
    if (!res.ok) throw overLimit(429, `read rate limit of ${rate} requests/s exceeded`, 'tenant', 'read_rate_limit', res.retryAfterMs);
  }
}
