import type { TenantRecord } from '@almanac/persistence';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { finalize, Observable } from 'rxjs';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import type { TimedRequest } from '../http/request-clock';
import { longPollWaitMs, requestOver } from '../http/request-deadline.interceptor';
import { isIngestRoute } from './request-rate-limiter';
import { type Release, TenantSlots } from './tenant-slots';

/**
 * How many of a tenant's requests one replica works on at once (ApiSettings.tenantRequestsInFlight:
 * half the pooled connections ingest leaves). The request rate alone let slow reads (a console
 * page over a large cold hour, ~170 ms) at a tenant's 200 a second hold every connection, so the
 * others' requests waited for the pool until they failed. A request past it waits for one of its
 * tenant's own turns, holding no connection, up to half the request timeout, then 429; a client's
 * parallel fast reads only take turns. A turn lasts until the route's work ends, not its answer: a
 * change answered at its deadline may still be writing. Ingest is not counted here (its batches
 * and single POSTs have their own shares, IngestService), nor a long poll's wait between reads
 * (JobWaits; each read takes a turn, JobQueriesService).
 */
@Injectable()
export class RequestsInFlight implements NestInterceptor {
  private readonly slots: TenantSlots;

  constructor(
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly reflector: Reflector,
  ) {
    this.slots = new TenantSlots(Number.POSITIVE_INFINITY, settings.tenantRequestsInFlight);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<TimedRequest & { tenant?: TenantRecord }>();
    if (!req.tenant || isIngestRoute(req) || longPollWaitMs(this.reflector, context) > 0) return next.handle();
    const tenantId = req.tenant.id;
    const over = requestOver(req, http.getResponse<FastifyReply>());
    return new Observable((answer) => {
      let answered = false;
      this.hold(tenantId, over).then(
        (release) => {
          if (answered) return release(); // answered (its deadline) while the turn was on its way
          // A plain observer, not `answer`: the route's work is not unsubscribed with the answer.
          next.handle().pipe(finalize(release)).subscribe({ next: (v) => answer.next(v), error: (e: unknown) => answer.error(e), complete: () => answer.complete() });
        },
        (err: unknown) => answer.error(err),
      );
      return () => {
        answered = true;
      };
    });
  }

  /** `work` in one of the tenant's turns (a long poll's reads), waiting for it as a request would. */
  async during<T>(tenantId: number, over: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    const release = await this.hold(tenantId, over);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * A turn for one of the tenant's requests, waiting for it up to half the request timeout (less
   * if `over` aborts), else 429. The console's pages and forms take theirs here (their session is a
   * cookie, read after this interceptor).
   */
  async hold(tenantId: number, over: AbortSignal | undefined): Promise<Release> {
    const given = await this.slots.acquire(tenantId, this.settings.requestTimeoutMs / 2, over);
    if (typeof given !== 'string') return given;
    if (over?.aborted) throw over.reason;
    throw overLimit(429, `this replica works on at most ${this.slots.share} of a tenant's requests at once`, 'tenant', 'concurrent_requests', 1000);
  }
}
