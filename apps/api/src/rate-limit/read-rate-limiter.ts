import type { TenantRecord } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import { TokenBuckets } from './token-bucket';

/**
 * Per-tenant limit on read requests (GET and HEAD on tenant routes) per second, per API replica: a tenant
 * polling its jobs in a tight loop cannot take the database from the others. 429 with
 * Retry-After, naming the limit; a burst of one second's worth is allowed.
 */
@Injectable()
export class ReadRateLimiter implements NestInterceptor {
  private readonly buckets = new TokenBuckets();

  constructor(
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<FastifyRequest & { tenant?: TenantRecord }>();
    // HEAD runs the GET handler (Fastify exposes one for every GET route): it costs the same.
    if ((req.method === 'GET' || req.method === 'HEAD') && req.tenant) this.take(req.tenant.id, 1);
    return next.handle();
  }

  /**
   * Spends `cost` reads of the tenant's budget or throws 429 with Retry-After. The console calls
   * it once it knows whose page it draws (its session is a cookie, read after this interceptor),
   * so a tenant's pages and its API reads share one budget.
   */
  take(tenantId: number, cost: number): void {
    const rate = this.settings.readRateLimitPerSecond;
    if (rate <= 0) return;
    const res = this.buckets.take(tenantId, cost, rate, rate, this.clock.now().getTime());
    if (!res.ok) throw overLimit(429, `read rate limit of ${rate} requests/s exceeded`, 'tenant', 'read_rate_limit', res.retryAfterMs);
  }
}
