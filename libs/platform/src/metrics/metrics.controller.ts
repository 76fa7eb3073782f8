import { Controller, Get, Header } from '@nestjs/common';
import { Registry } from 'prom-client';
import { MetricsService } from './metrics.service';

@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /** Prometheus text format 0.0.4 (`text/plain; version=0.0.4; charset=utf-8`). */
  @Get()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  async scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
