import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';

/** The shape every manifest shares; fields are read defensively because YAML can hold anything. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export function isKubeObject(v: unknown): v is KubeObject {
  const o = v as Partial<KubeObject> | null;
  return typeof o === 'object' && o !== null && typeof o.apiVersion === 'string' && typeof o.kind === 'string';
}

type Model = new (data: never) => { validate(): void };

/** Built-in kinds we ship, checked against the Kubernetes OpenAPI schema by kubernetes-models. */
const MODELS: Record<string, Model> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
};

/**
 * Custom resources: kubernetes-models 4.x ships no CRD models (the @kubernetes-models/* CRD
 * packages are separate), so these get hand-written checks of the fields their operators need.
 */
const CUSTOM: Record<string, (o: KubeObject) => string[]> = {
  'monitoring.coreos.com/v1/ServiceMonitor': checkServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': checkPrometheusRule,
  'keda.sh/v1alpha1/ScaledObject': checkScaledObject,
};

/** Problems with one object: schema errors for built-in kinds, shape errors for our CRDs. */
export function validateObject(o: KubeObject): string[] {
  const key = `${o.apiVersion}/${o.kind}`;
  const errors: string[] = [];
  if (typeof o.metadata?.name !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(o.metadata.name)) {
    errors.push(`metadata.name ${JSON.stringify(o.metadata?.name)} is not a DNS name`);
  }
  const model = MODELS[key];
  const custom = CUSTOM[key];
  if (model) {
    try {
      new model(o as never).validate();
    } catch (err) {
      errors.push((err as Error).message);
    }
  } else if (custom) {
    errors.push(...custom(o));
  } else {
    errors.push(`unknown kind ${key}: add its model to k8s/test/validate.ts`);
  }
  return errors;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const DURATION = /^(\d+(ms|s|m|h|d|w|y))+$/;
const isDuration = (v: unknown): boolean => typeof v === 'string' && DURATION.test(v);

function spec(o: KubeObject): Record<string, unknown> {
  return isObj(o.spec) ? o.spec : {};
}

function checkServiceMonitor(o: KubeObject): string[] {
  const s = spec(o);
  const errors: string[] = [];
  if (!isObj(s.selector)) errors.push('spec.selector must be a label selector');
  const endpoints = s.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0) return [...errors, 'spec.endpoints must be a non-empty list'];
  endpoints.forEach((e: unknown, i) => {
    if (!isObj(e)) return errors.push(`spec.endpoints[${i}] must be an object`);
    if (typeof e.port !== 'string' && e.targetPort === undefined) errors.push(`spec.endpoints[${i}] needs port (a name)`);
    if (e.path !== undefined && (typeof e.path !== 'string' || !e.path.startsWith('/'))) errors.push(`spec.endpoints[${i}].path must start with /`);
    for (const f of ['interval', 'scrapeTimeout']) {
      if (e[f] !== undefined && !isDuration(e[f])) errors.push(`spec.endpoints[${i}].${f} is not a duration`);
    }
  });
  return errors;
}

function checkPrometheusRule(o: KubeObject): string[] {
  const groups = spec(o).groups;
  if (!Array.isArray(groups) || groups.length === 0) return ['spec.groups must be a non-empty list'];
  return checkRuleGroups(groups, 'spec.groups');
}

/** Shape of Prometheus rule groups (the PrometheusRule spec and the plain rules file share it). */
export function checkRuleGroups(groups: unknown[], at: string): string[] {
  const errors: string[] = [];
  groups.forEach((g: unknown, gi) => {
    if (!isObj(g) || typeof g.name !== 'string' || !Array.isArray(g.rules)) {
      return errors.push(`${at}[${gi}] needs name and rules`);
    }
    g.rules.forEach((r: unknown, ri) => {
      const where = `${at}[${gi}].rules[${ri}]`;
      if (!isObj(r)) return errors.push(`${where} must be an object`);
      if ((typeof r.alert === 'string') === (typeof r.record === 'string')) errors.push(`${where} needs exactly one of alert or record`);
      if (typeof r.expr !== 'string' || r.expr.trim() === '') errors.push(`${where}.expr must be a PromQL string`);
      if (r.for !== undefined && !isDuration(r.for)) errors.push(`${where}.for is not a duration`);
      if (typeof r.alert === 'string') {
        const labels = isObj(r.labels) ? r.labels : {};
        if (!['critical', 'warning', 'info'].includes(String(labels.severity))) errors.push(`${where} needs labels.severity`);
        const ann = isObj(r.annotations) ? r.annotations : {};
        if (typeof ann.summary !== 'string' || typeof ann.runbook !== 'string') errors.push(`${where} needs summary and runbook annotations`);
      }
    });
  });
  return errors;
}

/** KEDA's fallback.behavior values (2.17 and later). */
const FALLBACK_BEHAVIORS = ['static', 'currentReplicas', 'currentReplicasIfHigher', 'currentReplicasIfLower'];

function checkScaledObject(o: KubeObject): string[] {
  const s = spec(o);
  const errors: string[] = [];
  const target = s.scaleTargetRef;
  if (!isObj(target) || typeof target.name !== 'string') errors.push('spec.scaleTargetRef.name is required');
  const min = s.minReplicaCount ?? 0;
  const max = s.maxReplicaCount ?? 100;
  if (!Number.isInteger(min) || !Number.isInteger(max) || (min as number) > (max as number)) {
    errors.push('minReplicaCount and maxReplicaCount must be integers with min <= max');
  }
  const fallback = s.fallback;
  if (fallback !== undefined) {
    if (!isObj(fallback) || !Number.isInteger(fallback.failureThreshold) || !Number.isInteger(fallback.replicas)) {
      errors.push('spec.fallback needs integer failureThreshold and replicas');
    } else if (fallback.behavior !== undefined && !FALLBACK_BEHAVIORS.includes(fallback.behavior as string)) {
      errors.push(`spec.fallback.behavior must be one of ${FALLBACK_BEHAVIORS.join(', ')}`);
    }
  }
  const triggers = s.triggers;
  if (!Array.isArray(triggers) || triggers.length === 0) return [...errors, 'spec.triggers must be a non-empty list'];
  triggers.forEach((t: unknown, i) => {
    if (!isObj(t) || typeof t.type !== 'string' || !isObj(t.metadata)) return errors.push(`spec.triggers[${i}] needs type and metadata`);
    // KEDA reads trigger metadata as strings: a bare number in YAML is rejected by the webhook.
    for (const [k, v] of Object.entries(t.metadata)) {
      if (typeof v !== 'string') errors.push(`spec.triggers[${i}].metadata.${k} must be a string`);
    }
    if (t.type === 'prometheus') {
      for (const k of ['serverAddress', 'query', 'threshold']) {
        if (t.metadata[k] === undefined) errors.push(`spec.triggers[${i}].metadata.${k} is required`);
      }
    }
  });
  return errors;
}
