import { MetricsService } from '@almanac/platform';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import type { Histogram } from 'prom-client';
import { isApiPath } from './api-exception.filter';

/**
 * Request duration by method, route pattern and status for the /v1 routes, from a Fastify
 * `onResponse` hook: it sees every answer, also those given before a controller runs (auth,
 * unreadable bodies, unknown routes), which a Nest middleware or interceptor would miss.
 */
@Injectable()
export class HttpMetricsHook implements OnModuleInit {
  private readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor(
    metrics: MetricsService,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.duration = metrics.histogram({
      name: 'almanac_http_request_duration_seconds',
      help: 'API request duration',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    });
  }

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return;
    fastify.addHook('onResponse', (req, reply, done) => {
      // The route pattern (`/v1/jobs/:id`), never the raw path: ids would explode the label set.
      const pattern = req.routeOptions.url;
      if (isApiPath(req.url.split('?', 1)[0])) {
        const route = pattern && isApiPath(pattern) ? pattern : 'unmatched';
        this.duration.observe({ method: req.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
      }
      done();
    });
  }
}
