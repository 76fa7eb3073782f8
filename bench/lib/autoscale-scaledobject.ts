import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { seconds } from '../../k8s/worker/scaling-query';

/** What KEDA reads from the worker pool's rendered ScaledObject (k8s/worker/scaledobject.yaml). */
export interface ScaledObjectSpec {
  name: string;
  query: string;
  threshold: number;
  /** KEDA's default is AverageValue: the HPA asks for ceil(value / threshold) replicas. */
  metricType: string;
  minReplicas: number;
  maxReplicas: number;
  pollingSeconds: number;
  /** The window its query runs a spike within (annotation almanac.io/scaling-window): needed replicas = spike / (throughput × this). */
  windowSeconds: number;
  /** The HPA's scale-down stabilization (it delays the floor after the desired count falls). */
  scaleDownStabilizationSeconds: number | null;
}

interface RenderedScaledObject {
  kind?: string;
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: {
    minReplicaCount?: number;
    maxReplicaCount?: number;
    pollingInterval?: number;
    advanced?: { horizontalPodAutoscalerConfig?: { behavior?: { scaleDown?: { stabilizationWindowSeconds?: number } } } };
    triggers?: { type?: string; metricType?: string; metadata?: { query?: string; threshold?: string } }[];
  };
}

/** `kubectl kustomize <root>/k8s/worker` (offline), so the bench reads exactly what would be applied. */
export function renderWorkerScaledObject(root: string): ScaledObjectSpec {
  const res = spawnSync('kubectl', ['kustomize', join(root, 'k8s/worker')], { encoding: 'utf8', timeout: 60_000, maxBuffer: 32 * 1024 * 1024 });
  if (res.status !== 0) throw new Error(`kubectl kustomize k8s/worker failed: ${res.stderr || res.error?.message}`);
  const objects = parseAllDocuments(res.stdout).map((d) => d.toJS() as RenderedScaledObject);
  const so = objects.find((o) => o.kind === 'ScaledObject');
  const trigger = so?.spec?.triggers?.[0];
  if (!so?.spec || trigger?.type !== 'prometheus' || !trigger.metadata?.query) throw new Error('the rendered k8s/worker has no ScaledObject with a prometheus trigger first');
  // KEDA's defaults where a field is absent (keda.sh/docs: ScaledObject spec).
  return {
    name: so.metadata?.name ?? 'unnamed',
    query: trigger.metadata.query.trim(),
    threshold: Number(trigger.metadata.threshold),
    metricType: trigger.metricType ?? 'AverageValue',
    minReplicas: so.spec.minReplicaCount ?? 0,
    maxReplicas: so.spec.maxReplicaCount ?? 100,
    pollingSeconds: so.spec.pollingInterval ?? 30,
    windowSeconds: seconds(so.metadata?.annotations?.['almanac.io/scaling-window'] ?? ''),
    scaleDownStabilizationSeconds: so.spec.advanced?.horizontalPodAutoscalerConfig?.behavior?.scaleDown?.stabilizationWindowSeconds ?? null,
  };
}

/**
 * The HPA's answer to KEDA's AverageValue metric: ceil(value / threshold), within the
 * ScaledObject's bounds. KEDA hands the value over in milli-units, so it is rounded to 0.001
 * first (3.0000004 asks for 3, not 4). The HPA's 10 % tolerance around the current count is not
 * modelled: this is the count it would move to.
 */
export function desiredReplicas(so: ScaledObjectSpec, value: number): number {
  const milli = (v: number) => Math.round(v * 1000);
  return Math.min(so.maxReplicas, Math.max(so.minReplicas, Math.ceil(milli(value) / milli(so.threshold))));
}
