import type { TenantRecord } from '@almanac/persistence';
import { Clock } from '@almanac/platform';
import { applyDecorators, CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { from, type Observable, switchMap } from 'rxjs';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import { RateLimits, type SharedTokenBuckets } from './shared-token-buckets';

const INGEST_ROUTE = 'almanac:ingest-route';

/**
 * A route that creates jobs: it spends the tenant's ingest budget (IngestRateLimiter, one per job,
 * before it validates anything) instead of the request budget, so an ingest request spends once.
 * Also marked in Fastify's route config, which hooks that run before the body is read can see.
 */
export const IngestRoute = () => applyDecorators(SetMetadata(INGEST_ROUTE, true), RouteConfig({ [INGEST_ROUTE]: true }));

/** Whether a request's route is an `@IngestRoute()`, from Fastify's route config (any stage). */
export function isIngestRoute(req: FastifyRequest): boolean {
  return (req.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[INGEST_ROUTE] === true;
}

/**
 * Per-tenant limit on requests per second, whatever their method, shared by every API replica:
 * reads (HEAD runs the GET handler and costs the same), cancels, reschedules, retries, schedule
 * and bulk operations alike, and requests the route will refuse as invalid, so a tenant cannot
 * take the API's event loop or the database from the others with requests no budget counts.
 * It is spent once the key is known and before the route does any work: a request over it is
 * refused without being validated. Ingest routes (`@IngestRoute()`) spend their job budget instead.
 * 429 with Retry-After, naming the limit; a burst of one second's worth is allowed.
 */
@Injectable()
export class RequestRateLimiter implements NestInterceptor {
  private readonly buckets: SharedTokenBuckets;

  constructor(
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly clock: Clock,
    private readonly reflector: Reflector,
    limits: RateLimits,
  ) {
    this.buckets = limits.buckets('request');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<FastifyRequest & { tenant?: TenantRecord }>();
    if (!req.tenant || this.reflector.get<boolean>(INGEST_ROUTE, context.getHandler())) return next.handle();
    return from(this.take(req.tenant.id, 1)).pipe(switchMap(() => next.handle()));
  }

  /**
   * Spends `cost` requests of the tenant's budget or rejects with 429 and Retry-After. The console
   * calls it once it knows whose page it draws or whose form it acts on (its session is a cookie,
   * read after this interceptor), so a tenant's pages and actions and its API requests share one budget.
   */
  async take(tenantId: number, cost: number): Promise<void> {
    const rate = this.settings.requestRateLimitPerSecond;
    if (rate <= 0) return;
    const res = await this.buckets.take(tenantId, cost, rate, rate, this.clock.now().getTime());
    if (!res.ok) throw this.refused(rate, res.retryAfterMs);
  }

  /** As take would refuse, if this replica's last take found the tenant's budget short; asks no one (SharedTokenBuckets.look). */
  assertRoom(tenantId: number): void {
    const rate = this.settings.requestRateLimitPerSecond;
    const res = rate > 0 ? this.buckets.look(tenantId, this.clock.now().getTime()) : { ok: true as const };
    if (!res.ok) throw this.refused(rate, res.retryAfterMs);
  }

  private refused(rate: number, retryAfterMs: number) {
    return overLimit(429, `request rate limit of ${rate} requests/s exceeded`, 'tenant', 'request_rate_limit', retryAfterMs);
  }
}
