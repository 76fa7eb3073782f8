import { Env, envInt, envList, envNumber, envString } from '@almanac/platform';
import { hostname } from 'node:os';
import { DEFAULT_RETRY_POLICY, RetryPolicy } from '@almanac/domain';
import { POOL_NAME_PATTERN } from '@almanac/domain';

export interface WorkerSettings {
  pools: string[];
  concurrency: number;
  shutdownMs: number;
  workerId: string;
  retryPolicy: RetryPolicy;
  /** Lease a claim starts with; the heartbeat renews it while the handler runs. */
  leaseMs: number;
  /** What the pool's autoscaling reads from this worker (PoolScalingGauges). */
  scaling: PoolScalingSettings;
}

/** Per replica of this worker's pools, for k8s/worker/scaledobject.yaml and its alert (issue 19). */
export interface PoolScalingSettings {
  /** Executions per second one replica is assumed to run until its pool has been measured saturated. */
  defaultThroughput: number;
  /** The pool's ceiling, as its ScaledObject's maxReplicaCount says (k8s/manifests.spec.ts checks they agree). */
  maxReplicas: number;
}

/** Worker role settings; a bad value stops the process at boot with the variable's name. */
export function workerSettingsFromEnv(env: Env): WorkerSettings {
  // Handlers are mostly I/O-bound and rows are claimed and completed in batches: more in flight
  // means bigger batches. 20,000 due noop jobs, one worker: 9,673 jobs/s at 200 against 6,642
  // at 100 (bench/throughput.ts, same hour). Handlers that use ctx.tx() each hold a database
  // connection while they run.
  const concurrency = envInt(env, 'ALMANAC_WORKER_CONCURRENCY', 200, { min: 1, max: 10_000 });
  return {
    pools: envList(env, 'ALMANAC_WORKER_POOLS', ['default'], { pattern: POOL_NAME_PATTERN, describe: 'pool names (a-z, 0-9, _ -)' }),
    concurrency,
    shutdownMs: envInt(env, 'ALMANAC_WORKER_SHUTDOWN_MS', 25_000, { min: 0, max: 3600_000 }),
    workerId: envString(env, 'ALMANAC_WORKER_ID', `${hostname()}-${process.pid}`, { pattern: /^[\w.:-]{1,100}$/ }),
    retryPolicy: retryPolicyFromEnv(env),
    // The backstop behind the heartbeat (a dead worker is rescued by its beat, within seconds):
    // a worker that beats but lost a run gets it back once its lease runs out. Long handlers
    // keep their lease by heartbeat.
    leaseMs: envInt(env, 'ALMANAC_LEASE_MS', 30_000, { min: 2000, max: 3600_000 }), // > 1 heartbeat
    scaling: poolScalingFromEnv(env, concurrency),
  };
}

/**
 * Until a pool has been seen saturated, its autoscaling assumes handlers of about a second: a
 * replica runs `concurrency` jobs a second. Set the default nearer the truth for slow handlers.
 */
function poolScalingFromEnv(env: Env, concurrency: number): PoolScalingSettings {
  return {
    // Decimal: five handlers of a minute each run 0.083 jobs/s.
    defaultThroughput: envNumber(env, 'ALMANAC_WORKER_DEFAULT_THROUGHPUT', concurrency, { min: 0.001, max: 1_000_000 }),
    maxReplicas: envInt(env, 'ALMANAC_WORKER_MAX_REPLICAS', 20, { min: 1, max: 10_000 }),
  };
}

/** Backoff ceiling for failed attempt n: min(max, base · 2^(n-1)), equal jitter (domain). */
function retryPolicyFromEnv(env: Env): RetryPolicy {
  const baseMs = envInt(env, 'ALMANAC_RETRY_BASE_MS', DEFAULT_RETRY_POLICY.baseMs, { min: 1, max: 24 * 3600_000 });
  const maxMs = envInt(env, 'ALMANAC_RETRY_MAX_MS', DEFAULT_RETRY_POLICY.maxMs, { min: baseMs, max: 30 * 24 * 3600_000 });
  return { baseMs, factor: DEFAULT_RETRY_POLICY.factor, maxMs };
}
