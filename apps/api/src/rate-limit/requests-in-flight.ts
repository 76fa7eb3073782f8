import type { TenantRecord } from '@almanac/persistence';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable, type Subscription } from 'rxjs';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { overLimit } from '../http/api-error';
import type { TimedRequest } from '../http/request-clock';
import { longPollWaitMs } from '../http/request-deadline.interceptor';
import { isIngestRoute } from './request-rate-limiter';
import { type Release, TenantSlots } from './tenant-slots';

/**
 * How many of a tenant's requests one replica works on at once: half its pooled connections
 * (ApiSettings.tenantRequestsInFlight). The request rate alone let slow reads (a console page over
 * a large cold hour, ~170 ms) at a tenant's 200 a second hold every connection, so the others'
 * requests waited for the pool until they failed. A request past it waits for one of its tenant's
 * own slots, holding no connection, until its deadline answers it (503); a client's parallel fast
 * reads only take turns. Not counted: ingest (its batches and single POSTs have their own shares,
 * IngestService) and a long poll's wait (JobWaits, 10 a tenant). A slot is held until the route
 * answers: a read stops at its deadline (onConnection), a change may run on (architecture.md,
 * Known gaps).
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
    const req = context.switchToHttp().getRequest<TimedRequest & { tenant?: TenantRecord }>();
    if (!req.tenant || isIngestRoute(req) || longPollWaitMs(this.reflector, context) > 0) return next.handle();
    const tenantId = req.tenant.id;
    return new Observable((answer) => {
      let over = false;
      let release: Release | undefined;
      let handled: Subscription | undefined;
      this.hold(tenantId, req.deadline).then(
        (given) => {
          if (over) return given(); // answered (its deadline) while the slot was on its way
          release = given;
          handled = next.handle().subscribe(answer);
        },
        (err: unknown) => answer.error(err),
      );
      return () => {
        over = true;
        handled?.unsubscribe();
        release?.();
      };
    });
  }

  /**
   * A slot for one of the tenant's requests, waiting for it until `deadline` aborts; the console's
   * pages and forms take theirs here (their session is a cookie, read after this interceptor).
   */
  async hold(tenantId: number, deadline?: AbortSignal): Promise<Release> {
    const given = await this.slots.acquire(tenantId, this.settings.requestTimeoutMs, deadline);
    if (typeof given === 'string') throw overLimit(503, `this replica works on at most ${this.slots.share} of a tenant's requests at once`, 'tenant', 'concurrent_requests', 1000);
    return given;
  }
}
