import { CallHandler, createParamDecorator, ExecutionContext, Inject, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { API_SETTINGS, ApiSettings } from '../api-settings';
import { unavailable } from './api-error';
import { deadlineElapsedMs, type TimedRequest } from './request-clock';

/**
 * Every /v1 request is answered within ALMANAC_REQUEST_TIMEOUT_MS once its body is in (see
 * RequestClockHook): past it, 503 with Retry-After. Time spent authenticating counts (the
 * chaos bench's Postgres stall measured 5 s answers when the key lookup and the handler each
 * had the whole deadline); the upload does not (it has the body timeout). Work still queued is
 * withdrawn through `@Deadline()`; work under way is not (a job whose group commit has left may
 * still commit), which is why the answer says to resend with the same key: a resend is then 200
 * with the job, never a second job.
 */
const LONG_POLL = 'almanac:long-poll';

/** The request's deadline as a signal, for work that can still be withdrawn when it passes (see TimedRequest). */
export const Deadline = createParamDecorator((_: unknown, ctx: ExecutionContext): AbortSignal | undefined => ctx.switchToHttp().getRequest<TimedRequest>().deadline);

/** Aborted once the request needs no more work: its connection closed (the client went away) or its deadline passed. */
export const RequestOver = createParamDecorator((_: unknown, ctx: ExecutionContext): AbortSignal => {
  const http = ctx.switchToHttp();
  return requestOver(http.getRequest<TimedRequest>(), http.getResponse<FastifyReply>());
});

/** What `@RequestOver()` gives a route, for the request and reply at hand: one per request (RequestsInFlight asks first). */
export function requestOver(req: TimedRequest & { over?: AbortSignal }, reply: FastifyReply): AbortSignal {
  return (req.over ??= requestOverSignal(req, reply));
}

function requestOverSignal(req: TimedRequest, reply: FastifyReply): AbortSignal {
  const res = reply.raw;
  const gone = new AbortController();
  // Its reason is an answer, not a defect: a read stopped by it must not be logged as a 500 (nobody hears the answer).
  const why = () => gone.abort(unavailable('the client closed the connection'));
  if (res.destroyed || req.raw.socket?.destroyed) why(); // gone before the route ran: 'close' is past
  else res.once('close', why);
  return req.deadline ? AbortSignal.any([req.deadline, gone.signal]) : gone.signal;
}

/** A route that may hold its answer for `?waitSeconds=` (whole seconds): its deadline grows by that much. */
export const LongPoll = () => SetMetadata(LONG_POLL, true);

/** `waitSeconds` of a LongPoll route in ms, as the route will read it (0 for other routes and invalid values: the route answers 400). */
export function longPollWaitMs(reflector: Reflector, context: ExecutionContext): number {
  if (!reflector.get<boolean>(LONG_POLL, context.getHandler())) return 0;
  const raw = context.switchToHttp().getRequest<{ query?: Record<string, unknown> }>().query?.waitSeconds;
  return typeof raw === 'string' && /^\d{1,3}$/.test(raw) ? Number(raw) * 1000 : 0;
}

@Injectable()
export class RequestDeadlineInterceptor implements NestInterceptor {
  constructor(
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<TimedRequest>();
    const ms = this.settings.requestTimeoutMs + longPollWaitMs(this.reflector, context);
    const left = Math.max(1, Math.ceil(ms - deadlineElapsedMs(req, http.getResponse<FastifyReply>().elapsedTime ?? 0)));
    const late = () => unavailable(`not answered within ${ms} ms; retry shortly (a request with the same key is safe to resend)`);
    // One timer, cleared with the answer. AbortSignal.timeout's could not be: each fired seconds
    // after its request was answered and made a DOMException (~30 µs of API CPU a POST at 1,000/s).
    const expired = new AbortController();
    req.deadline = expired.signal;
    return new Observable((answer) => {
      const timer = setTimeout(() => {
        const err = late(); // the signal's reason too: work withdrawn by it fails with this answer
        expired.abort(err);
        answer.error(err);
      }, left);
      const handled = next.handle().subscribe(answer);
      return () => {
        clearTimeout(timer);
        handled.unsubscribe();
      };
    });
  }
}
