import { type MetricsService, OTHER_TENANT, setAsideCounter, type TenantLabels } from '@almanac/platform';
import type { Counter, Gauge, Histogram } from 'prom-client';

/** Lag is the number people alert on; buckets start at 1 ms so a healthy p99 is resolvable. */
const LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Metrics of the dispatcher and workers; get-or-create, so both roles in one process share them. */
export class DeliveryMetrics {
  readonly lag: Histogram<'pool'>;
  /** Lag per tenant: the top N tenants by backlog (TenantLabels) and `other`. */
  readonly tenantLag: Histogram<'tenant'>;
  readonly executions: Counter<'kind' | 'outcome'>;
  readonly deadJobs: Counter;
  readonly handlerDuration: Histogram<'kind'>;
  readonly dropped: Counter<'reason'>;
  /** Items a batch statement refused on a value, set aside so the rest of the batch was written. */
  readonly setAside: Counter<'statement'>;
  readonly dispatched: Counter<'pool' | 'via'>;
  readonly poolWorkers: Gauge<'pool'>;
  readonly poolCapacity: Gauge<'pool'>;
  readonly poolInFlight: Gauge<'pool'>;
  readonly poolBacklog: Gauge<'pool'>;
  readonly kindServed: Gauge<'kind' | 'pool'>;

  /** Without `tenants`, every tenant's lag counts as `other`. */
  constructor(
    metrics: MetricsService,
    private readonly tenants?: TenantLabels,
  ) {
    this.lag = metrics.histogram({ name: 'almanac_dispatch_lag_seconds', help: 'Handler start minus the job due time', labelNames: ['pool'] as const, buckets: LAG_BUCKETS });
    const perTenant = 'Handler start minus the job due time, per tenant: the top N by due backlog, the rest as "other"';
    this.tenantLag = metrics.histogram({ name: 'almanac_tenant_lag_seconds', labelNames: ['tenant'] as const, buckets: LAG_BUCKETS, help: perTenant });
    this.tenantLag.zero({ tenant: OTHER_TENANT });
    // A tenant that left the top N loses its series, so labels stay bounded over time.
    tenants?.onDropped((tenant) => this.tenantLag.remove({ tenant }));
    this.executions = metrics.counter({ name: 'almanac_executions_total', labelNames: ['kind', 'outcome'] as const, help: 'Recorded attempts by kind and outcome (succeeded, failed, snoozed, discarded, released)' });
    this.deadJobs = metrics.counter({ name: 'almanac_jobs_dead_total', help: 'Jobs a worker left dead: attempts ran out, or the handler discarded the job' });
    this.handlerDuration = metrics.histogram({ name: 'almanac_handler_duration_seconds', labelNames: ['kind'] as const, buckets: DURATION_BUCKETS, help: 'Time inside the handler, per kind' });
    const dropped = 'Hints not run because the row no longer wanted them (stale: cancelled, finished, running elsewhere; moved_later; stale_completion; unknown_kind: no handler here, offered again by the overdue sweep)';
    this.dropped = metrics.counter({ name: 'almanac_dispatch_dropped_total', labelNames: ['reason'] as const, help: dropped });
    this.setAside = setAsideCounter(metrics);
    const dispatched = "Jobs handed to a pool's ready lists (via = hot: from the hot queue; repair: the overdue sweep's re-hints)";
    this.dispatched = metrics.counter({ name: 'almanac_dispatched_total', labelNames: ['pool', 'via'] as const, help: dispatched });
    // Per pool, as the dispatcher sees it (the workers table, the ready lists): what autoscaling and the "pool has no worker" alert read.
    const poolGauge = (name: `almanac_${string}`, help: string) => metrics.gauge({ name, help, labelNames: ['pool'] as const });
    this.poolWorkers = poolGauge('almanac_pool_workers', 'Live worker processes serving the pool (a heartbeat within 5 s, not shutting down)');
    this.poolCapacity = poolGauge('almanac_pool_capacity', "Handlers the pool can run at once: the sum of its live workers' concurrency");
    this.poolInFlight = poolGauge('almanac_pool_in_flight', "Jobs the pool's workers are running (taken and not finished)");
    this.poolBacklog = poolGauge('almanac_pool_backlog', "Jobs waiting in the pool's ready lists for a worker: due, or due within ~150 ms");
    const served = 'Per registered kind: 1 when the pool it routes to has a live worker, 0 when none would run it';
    this.kindServed = metrics.gauge({ name: 'almanac_kind_served', labelNames: ['kind', 'pool'] as const, help: served });
  }

  /** One handler start: per pool, and per tenant under its label. */
  observeLag(pool: string, tenantId: number, seconds: number): void {
    this.lag.observe({ pool }, seconds);
    this.tenantLag.observe({ tenant: this.tenants?.label(tenantId) ?? OTHER_TENANT }, seconds);
  }
}
