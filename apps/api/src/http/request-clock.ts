import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { performance } from 'node:perf_hooks';

/** A request with the instant its deadline counts from (see RequestClockHook). */
export type TimedRequest = FastifyRequest & {
  deadlineFrom?: number;
  authMs?: number;
  /** Aborts when the request's deadline passes (RequestDeadlineInterceptor): work still queued then is dropped. */
  deadline?: AbortSignal;
};

/**
 * Starts the request deadline's clock once the body is in (a `preValidation` hook), less the
 * time authentication spent before the body was read: a client uploading a big batch slowly
 * is bounded by the body timeout, not answered 503 for work that commits anyway.
 */
@Injectable()
export class RequestClockHook implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return;
    fastify.addHook('preValidation', (req: TimedRequest, _reply, done) => {
      req.deadlineFrom = performance.now() - (req.authMs ?? 0);
      done();
    });
  }
}

/** Milliseconds of the request deadline used so far. */
export function deadlineElapsedMs(req: TimedRequest, fallbackMs: number): number {
  return req.deadlineFrom === undefined ? fallbackMs : performance.now() - req.deadlineFrom;
}
