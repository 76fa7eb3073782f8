import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from './validate';

type EnvFrom = { configMapRef?: { name: string }; secretRef?: { name: string } }[];
interface Workload extends KubeObject {
  spec: { template: { spec: { containers: { envFrom?: EnvFrom }[]; initContainers?: { name: string; envFrom?: EnvFrom }[] } } };
}

/**
 * A pod's initContainers read the settings its app container reads: docs/configuration.md puts
 * settings in the almanac-config ConfigMap, and one set there (ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S,
 * the ALMANAC_PG_* bounds) must reach wait-for-schema too, not only the app.
 */
export function checkInitContainerEnv(objects: KubeObject[]): string[] {
  const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job') as Workload[];
  return workloads.flatMap((w) => {
    const pod = w.spec.template.spec;
    const app = pod.containers[0]?.envFrom ?? [];
    return (pod.initContainers ?? [])
      .filter((c) => !isDeepStrictEqual(c.envFrom ?? [], app))
      .map((c) => `${w.metadata.name}/${c.name}: envFrom ${JSON.stringify(c.envFrom ?? [])} differs from the app container's ${JSON.stringify(app)}`);
  });
}
