import { Env, type PoolScalingSettings, readSetting } from '@almanac/platform';
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

/** Worker role settings, as libs/config/src/settings/workers.ts declares them. */
export function workerSettingsFromEnv(env: Env): WorkerSettings {
  const concurrency = readSetting(env, 'ALMANAC_WORKER_CONCURRENCY');
  const baseMs = readSetting(env, 'ALMANAC_RETRY_BASE_MS');
  return {
    pools: readSetting(env, 'ALMANAC_WORKER_POOLS'),
    concurrency,
    shutdownMs: readSetting(env, 'ALMANAC_WORKER_SHUTDOWN_MS'),
    workerId: readSetting(env, 'ALMANAC_WORKER_ID', { default: `${hostname()}-${process.pid}` }),
    // Backoff ceiling for failed attempt n: min(max, base · 2^(n-1)), equal jitter (domain).
    retryPolicy: { baseMs, factor: DEFAULT_RETRY_POLICY.factor, maxMs: readSetting(env, 'ALMANAC_RETRY_MAX_MS', { min: baseMs }) },
    leaseMs: readSetting(env, 'ALMANAC_LEASE_MS'),
    // Until a pool has been seen saturated, its autoscaling assumes handlers of about a second:
    // a replica runs `concurrency` jobs a second. Set the default nearer the truth for slow handlers.
    scaling: {
      defaultThroughput: readSetting(env, 'ALMANAC_WORKER_DEFAULT_THROUGHPUT', { default: concurrency }),
      maxReplicas: readSetting(env, 'ALMANAC_WORKER_MAX_REPLICAS'),
    },
  };
}

