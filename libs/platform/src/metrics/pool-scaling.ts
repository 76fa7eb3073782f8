import type { MetricsService } from './metrics.service';

/** Per worker replica of a pool, for k8s/worker/scaledobject.yaml and its alert (issue 19). */
export interface PoolScalingSettings {
  /** Executions per second one replica is assumed to run until its pool has been measured saturated. */
  defaultThroughput: number;
  /** The pool's ceiling, as its ScaledObject's maxReplicaCount says (k8s/manifests.spec.ts checks they agree). */
  maxReplicas: number;
}

/**
 * What a pool's autoscaling needs from its workers besides what they measure (issue 19): the
 * throughput to assume before the pool has been seen saturated, and the pool's ceiling for the
 * AlmanacSpikeBeyondCapacity alert. Constant per process, so they are set once; every replica
 * reports the same values, and the rules take the max per pool.
 */
export function exportPoolScaling(metrics: MetricsService, pools: readonly string[], scaling: PoolScalingSettings): void {
  const defaultThroughput = metrics.gauge({
    name: 'almanac_pool_default_throughput',
    help: 'Executions per second one worker replica is assumed to run until its pool has been measured saturated (ALMANAC_WORKER_DEFAULT_THROUGHPUT)',
    labelNames: ['pool'] as const,
  });
  const maxReplicas = metrics.gauge({
    name: 'almanac_pool_max_replicas',
    help: "The most worker replicas the pool's autoscaler may run (ALMANAC_WORKER_MAX_REPLICAS, the ScaledObject's maxReplicaCount)",
    labelNames: ['pool'] as const,
  });
  for (const pool of pools) {
    defaultThroughput.set({ pool }, scaling.defaultThroughput);
    maxReplicas.set({ pool }, scaling.maxReplicas);
  }
}
