import { DUE_WINDOWS } from '@almanac/domain';
import { workerSettingsFromEnv } from '../../libs/worker-runtime/src/worker-settings';
import { scalingQuery, windowsRead } from '../worker/scaling-query';
import type { KubeObject } from './validate';

/** What the worker Deployment reports as its pool's ceiling when ALMANAC_WORKER_MAX_REPLICAS is unset. */
const DEFAULT_MAX_REPLICAS = String(workerSettingsFromEnv({}).scaling.maxReplicas);

interface ScaledObjectSpec {
  scaleTargetRef?: { name?: string };
  maxReplicaCount?: number;
  fallback?: { behavior?: string };
  triggers?: { metadata?: { query?: string } }[];
}
interface WorkerDeployment extends KubeObject {
  spec: { template: { metadata?: { labels?: Record<string, string> }; spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
}

/**
 * Every worker ScaledObject (issue 19) carries exactly the query scaling-query.js writes for its
 * pool, lead and window (annotations almanac.io/scaling-lead and -window), reads due windows the
 * promoter exports, and has the maxReplicaCount its Deployment reports to the spike alert (as
 * has every HPA on the CPU fallback).
 */
export function checkScalingQueries(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  const exported = new Set<string>(DUE_WINDOWS.map((w) => w.label));
  for (const so of objects.filter((o) => o.kind === 'ScaledObject')) {
    const at = `ScaledObject ${so.metadata.name}`;
    const spec = so.spec as ScaledObjectSpec;
    const dep = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === spec.scaleTargetRef?.name) as WorkerDeployment | undefined;
    const pool = dep?.spec.template.metadata?.labels?.['almanac.io/pool'];
    const annotations = (so.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    const lead = annotations['almanac.io/scaling-lead'];
    const window = annotations['almanac.io/scaling-window'];
    if (!dep || !pool || !lead || !window) {
      errors.push(`${at}: needs a worker Deployment with an almanac.io/pool label, and almanac.io/scaling-lead and -window annotations`);
      continue;
    }
    let want: string;
    try {
      want = scalingQuery({ pool, lead, window });
    } catch (err) {
      errors.push(`${at}: ${(err as Error).message}`);
      continue;
    }
    const missing = windowsRead(lead, window).filter((w) => !exported.has(w));
    if (missing.length) errors.push(`${at}: almanac_jobs_due has no window ${missing.join(', ')} (it exports ${[...exported].join(', ')})`);
    if (spec.triggers?.[0]?.metadata?.query !== want) {
      errors.push(`${at}: query differs from \`node k8s/worker/scaling-query.js --pool ${pool} --lead ${lead} --window ${window}\`:\n${want}`);
    }
    const env = maxReplicasEnv(dep);
    if (String(spec.maxReplicaCount) !== env) {
      errors.push(`${at}: maxReplicaCount ${spec.maxReplicaCount} differs from ${dep.metadata.name}'s ALMANAC_WORKER_MAX_REPLICAS ${env}`);
    }
  }
  // A pool on the CPU HPA fallback reports its ceiling for the spike alert just the same.
  for (const hpa of objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const spec = hpa.spec as { scaleTargetRef?: { name?: string }; maxReplicas?: number };
    const dep = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === spec.scaleTargetRef?.name) as WorkerDeployment | undefined;
    if (!dep) continue;
    const env = maxReplicasEnv(dep);
    if (String(spec.maxReplicas) !== env) errors.push(`HorizontalPodAutoscaler ${hpa.metadata.name}: maxReplicas ${spec.maxReplicas} differs from ${dep.metadata.name}'s ALMANAC_WORKER_MAX_REPLICAS ${env}`);
  }
  return errors;
}

/** Fallback behaviours that never take replicas from a pool: KEDA's default, static, sets exactly `replicas`. */
const HOLDING_FALLBACKS = ['currentReplicasIfHigher', 'currentReplicas'];

/**
 * Every ScaledObject falls back, when Prometheus cannot answer, to no fewer replicas than the
 * pool has: a static fallback would cut a pool at 20 replicas to 2 in the middle of a spike while
 * Prometheus restarts (fallback.behavior, KEDA 2.17 and later).
 */
export function checkScalingFallbacks(objects: KubeObject[]): string[] {
  return objects
    .filter((o) => o.kind === 'ScaledObject')
    .filter((so) => !HOLDING_FALLBACKS.includes((so.spec as ScaledObjectSpec).fallback?.behavior ?? 'static'))
    .map((so) => `ScaledObject ${so.metadata.name}: fallback.behavior must be ${HOLDING_FALLBACKS.join(' or ')} (got ${(so.spec as ScaledObjectSpec).fallback?.behavior ?? 'none'})`);
}

/** As the worker reads it: the container's env (a ConfigMap value is not seen here; set it on the Deployment). */
function maxReplicasEnv(dep: WorkerDeployment): string {
  return dep.spec.template.spec.containers[0]?.env?.find((e) => e.name === 'ALMANAC_WORKER_MAX_REPLICAS')?.value ?? DEFAULT_MAX_REPLICAS;
}
