import type { MetricsService } from '@almanac/platform';
import type { Counter, Histogram } from 'prom-client';

/** Lag is the number people alert on; buckets start at 1 ms so a healthy p99 is resolvable. */
const LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Metrics of the dispatcher and workers; get-or-create, so both roles in one process share them. */
export class DeliveryMetrics {
  readonly lag: Histogram<'pool'>;
  readonly executions: Counter<'kind' | 'outcome'>;
  readonly handlerDuration: Histogram<'kind'>;
  readonly dropped: Counter<'reason'>;
  readonly dispatched: Counter<'pool'>;

  constructor(metrics: MetricsService) {
    this.lag = metrics.histogram({
      name: 'almanac_dispatch_lag_seconds',
      help: 'Handler start minus the job due time',
      labelNames: ['pool'] as const,
      buckets: LAG_BUCKETS,
    });
    this.executions = metrics.counter({
      name: 'almanac_executions_total',
      help: 'Recorded attempts by kind and outcome (succeeded, failed, discarded, released)',
      labelNames: ['kind', 'outcome'] as const,
    });
    this.handlerDuration = metrics.histogram({
      name: 'almanac_handler_duration_seconds',
      help: 'Time inside the handler, per kind',
      labelNames: ['kind'] as const,
      buckets: DURATION_BUCKETS,
    });
    this.dropped = metrics.counter({
      name: 'almanac_dispatch_dropped_total',
      help: 'Deliveries dropped because the row no longer wanted them (cancelled, finished, rescheduled, stale attempt…)',
      labelNames: ['reason'] as const,
    });
    this.dispatched = metrics.counter({
      name: 'almanac_dispatched_total',
      help: 'Jobs claimed by the dispatcher and routed to a pool queue',
      labelNames: ['pool'] as const,
    });
  }
}
