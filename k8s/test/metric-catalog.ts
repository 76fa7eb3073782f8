/**
 * The Almanac metrics that dashboards, alert rules and KEDA triggers may use, with their type
 * and label names. k8s/manifests.spec.ts checks every query against this list; k8s/metrics.spec.ts
 * checks this list against what the apps really export (their /metrics), so a renamed metric
 * breaks a test instead of a dashboard.
 */
export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface CatalogEntry {
  type: MetricType;
  labels: readonly string[];
}

export const ALMANAC_METRICS: Readonly<Record<string, CatalogEntry>> = {
  // api
  almanac_jobs_ingested_total: { type: 'counter', labels: ['tier'] },
  almanac_http_request_duration_seconds: { type: 'histogram', labels: ['method', 'route', 'status'] },
  almanac_ingest_commit_rows: { type: 'histogram', labels: [] },
  almanac_ingest_shared_inserts_split_total: { type: 'counter', labels: ['reason'] },
  almanac_ingest_enqueue_failures_total: { type: 'counter', labels: [] },
  almanac_rate_limit_local_decisions_total: { type: 'counter', labels: ['limit'] },
  // promoter
  almanac_jobs: { type: 'gauge', labels: ['state'] },
  almanac_sweep_runs_total: { type: 'counter', labels: ['sweep', 'outcome'] },
  almanac_sweep_duration_seconds: { type: 'histogram', labels: ['sweep'] },
  almanac_promoted_total: { type: 'counter', labels: [] },
  almanac_overdue_requeued_total: { type: 'counter', labels: ['reason'] },
  almanac_schedule_occurrences_total: { type: 'counter', labels: ['outcome'] },
  almanac_schedule_runs_total: { type: 'counter', labels: ['outcome'] },
  almanac_schedules_behind: { type: 'gauge', labels: ['tenant'] },
  almanac_bulk_jobs_total: { type: 'counter', labels: ['action', 'outcome'] },
  almanac_lease_expired_dead_total: { type: 'counter', labels: [] },
  almanac_retention_removed_total: { type: 'counter', labels: ['keys'] },
  almanac_reserved_keys_expired_total: { type: 'counter', labels: [] },
  almanac_retention_behind_seconds: { type: 'gauge', labels: [] },
  almanac_jobs_due: { type: 'gauge', labels: ['pool', 'within'] },
  // dispatcher and workers
  almanac_dispatch_lag_seconds: { type: 'histogram', labels: ['pool'] },
  almanac_dispatched_total: { type: 'counter', labels: ['pool', 'via'] },
  almanac_dispatch_dropped_total: { type: 'counter', labels: ['reason'] },
  almanac_set_aside_total: { type: 'counter', labels: ['statement'] },
  almanac_executions_total: { type: 'counter', labels: ['kind', 'outcome'] },
  almanac_jobs_dead_total: { type: 'counter', labels: [] },
  almanac_handler_duration_seconds: { type: 'histogram', labels: ['kind'] },
  // workers: their pools' autoscaling settings (every replica the same: use max)
  almanac_pool_default_throughput: { type: 'gauge', labels: ['pool'] },
  almanac_pool_max_replicas: { type: 'gauge', labels: ['pool'] },
  // per tenant: the promoter's top N by due backlog and "other" (workers: lag; promoters: backlog, use max)
  almanac_tenant_lag_seconds: { type: 'histogram', labels: ['tenant'] },
  almanac_tenant_backlog: { type: 'gauge', labels: ['tenant'] },
  almanac_tenant_oldest_due_seconds: { type: 'gauge', labels: ['tenant'] },
  almanac_tenant_stored_bytes: { type: 'gauge', labels: ['tenant'] },
  // per pool, as the dispatcher reads the shared state (several replicas: use max, not sum)
  almanac_pool_workers: { type: 'gauge', labels: ['pool'] },
  almanac_kind_served: { type: 'gauge', labels: ['kind', 'pool'] },
  almanac_pool_capacity: { type: 'gauge', labels: ['pool'] },
  almanac_pool_in_flight: { type: 'gauge', labels: ['pool'] },
  almanac_pool_backlog: { type: 'gauge', labels: ['pool'] },
  // platform (every role)
  almanac_redis_memory_bytes: { type: 'gauge', labels: [] },
  almanac_redis_up: { type: 'gauge', labels: [] },
  almanac_queue_jobs: { type: 'gauge', labels: ['queue', 'state'] },
};

/** Labels Prometheus adds at scrape time (ServiceMonitor relabelings included). */
export const TARGET_LABELS: readonly string[] = [
  'instance', 'job', 'namespace', 'pod', 'service', 'endpoint', 'container', 'role', 'worker_pool',
];

/** Series names a metric shows up as: a histogram as its _bucket, _sum and _count series. */
export function seriesNames(name: string, entry: CatalogEntry): string[] {
  return entry.type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
}

/** Series name → catalog metric, with the labels a selector on that series may use. */
export function seriesIndex(): Map<string, { metric: string; labels: readonly string[] }> {
  const index = new Map<string, { metric: string; labels: readonly string[] }>();
  for (const [name, entry] of Object.entries(ALMANAC_METRICS)) {
    for (const s of seriesNames(name, entry)) {
      index.set(s, { metric: name, labels: s.endsWith('_bucket') ? [...entry.labels, 'le'] : entry.labels });
    }
  }
  return index;
}
