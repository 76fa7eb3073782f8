import { Env, type MetricsService, readSetting } from '@almanac/platform';
import { hostname } from 'node:os';
import { DEFAULT_RETRY_POLICY, RetryPolicy } from '@almanac/domain';

export interface WorkerSettings {
  pools: string[];
  concurrency: number;
  shutdownMs: number;
  workerId: string;
  retryPolicy: RetryPolicy;
  /** Lease a claim starts with; the heartbeat renews it while the handler runs. */
  leaseMs: number;
  /** What the pool's autoscaling reads from this worker (exportPoolScaling). */
  scaling: PoolScalingSettings;
}

/** Per replica of this worker's pools, for k8s/worker/scaledobject.yaml and its alert (issue 19). */
export interface PoolScalingSettings {
  /** Executions per second one replica is assumed to run until its pool has been measured saturated. */
  defaultThroughput: number;
  /** The pool's ceiling, as its ScaledObject's maxReplicaCount says (k8s/manifests.spec.ts checks they agree). */
  maxReplicas: number;
}

/** Worker role settings, as libs/config/src/settings/workers.ts declares them. */
export function workerSettingsFromEnv(env: Env): WorkerSettings {
  const concurrency = readSetting(env, 'ALMANAC_WORKER_CONCURRENCY');
  return {
    pools: readSetting(env, 'ALMANAC_WORKER_POOLS'),
    concurrency,
    shutdownMs: readSetting(env, 'ALMANAC_WORKER_SHUTDOWN_MS'),
    workerId: readSetting(env, 'ALMANAC_WORKER_ID', { default: `${hostname()}-${process.pid}` }),
    retryPolicy: retryPolicyFromEnv(env),
    leaseMs: readSetting(env, 'ALMANAC_LEASE_MS'),
    // Until a pool has been seen saturated, its autoscaling assumes handlers of about a second:
    // a replica runs `concurrency` jobs a second. Set the default nearer the truth for slow handlers.
    scaling: {
      defaultThroughput: readSetting(env, 'ALMANAC_WORKER_DEFAULT_THROUGHPUT', { default: concurrency }),
      maxReplicas: readSetting(env, 'ALMANAC_WORKER_MAX_REPLICAS'),
    },
  };
}

/** Backoff ceiling for failed attempt n: min(max, base · 2^(n-1)), equal jitter (domain). */
function retryPolicyFromEnv(env: Env): RetryPolicy {
  const baseMs = readSetting(env, 'ALMANAC_RETRY_BASE_MS');
  const maxMs = readSetting(env, 'ALMANAC_RETRY_MAX_MS', { min: baseMs });
  return { baseMs, factor: DEFAULT_RETRY_POLICY.factor, maxMs };
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
