import { MetricsService } from '@almanac/platform';
import { Injectable, NestMiddleware } from '@nestjs/common';
import type { HttpRequest as Request, HttpResponse as Response, NextFunction } from './http-types';
import type { Histogram } from 'prom-client';

/** Request duration by method, route pattern and status for the /v1 routes. */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  private readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor(metrics: MetricsService) {
    this.duration = metrics.histogram({
      name: 'almanac_http_request_duration_seconds',
      help: 'API request duration',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    });
  }

  use(req: Request, res: Response, next: NextFunction): void {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      // The route pattern (`/v1/jobs/:id`), never the raw path: ids would explode the label set.
      const route = req.route?.path ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      this.duration.observe({ method: req.method, route: `${req.baseUrl}${route}`, status: String(res.statusCode) }, seconds);
    });
    next();
  }
}
