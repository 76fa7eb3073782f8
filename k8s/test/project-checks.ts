import type { KubeObject } from './validate';

/**
 * Almanac-specific rules for a set of manifests (a rendered overlay, or the raw files when
 * kubectl is missing). Each check returns readable problems; an empty list means it holds.
 */

// Minimal views of the fields we read; the objects were schema-checked before these run.
interface EnvVar { name: string; value?: string }
interface Probe { httpGet?: { path?: string; port?: string | number } }
interface Container {
  name: string;
  image?: string;
  args?: string[];
  command?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type?: string } };
  volumes?: { name: string; emptyDir?: object; configMap?: { name: string } }[];
}
interface PodTemplate { metadata?: { labels?: Record<string, string> }; spec: PodSpec }
interface Workload extends KubeObject { spec: { template: PodTemplate; selector?: { matchLabels?: Record<string, string> } } }

export const ROLES = ['api', 'promoter', 'dispatcher', 'worker'] as const;
const DEFAULT_WORKER_SHUTDOWN_MS = 25_000;
/**
 * Time for the process to exit after the worker's drain deadline: the drain's bounded waits
 * after it (heartbeat leave ≤2 s, take close ≤3 s, heartbeat stop ≤4 s) add ~9 s, plus the
 * release writes and the exit itself.
 */
export const SHUTDOWN_MARGIN_S = 15;

const of = (objects: KubeObject[], kind: string): KubeObject[] => objects.filter((o) => o.kind === kind);
const deployments = (objects: KubeObject[]): Workload[] => of(objects, 'Deployment') as Workload[];
const workloads = (objects: KubeObject[]): Workload[] =>
  objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job') as Workload[];
const component = (o: KubeObject): string | undefined => o.metadata.labels?.['app.kubernetes.io/component'];
const envOf = (c: Container, name: string): string | undefined => c.env?.find((e) => e.name === name)?.value;
const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/** The main (non-init) containers of every Deployment: probes, limits, security, ports. */
export function checkDeployments(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  for (const d of deployments(objects)) {
    const name = d.metadata.name;
    const role = component(d);
    const pod = d.spec.template.spec;
    if (!role || !(ROLES as readonly string[]).includes(role)) errors.push(`${name}: app.kubernetes.io/component must be one of ${ROLES.join(', ')}`);
    if (!matches(d.spec.selector?.matchLabels, d.spec.template.metadata?.labels)) errors.push(`${name}: selector does not match the pod labels`);
    if (pod.securityContext?.runAsNonRoot !== true) errors.push(`${name}: pod securityContext.runAsNonRoot must be true`);
    if (!pod.securityContext?.runAsUser) errors.push(`${name}: pod securityContext.runAsUser must be a non-zero uid`);
    if (pod.securityContext?.seccompProfile?.type !== 'RuntimeDefault') errors.push(`${name}: seccompProfile must be RuntimeDefault`);
    for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
      const at = `${name}/${c.name}`;
      errors.push(...containerSecurity(at, c));
      for (const kind of ['requests', 'limits'] as const) {
        for (const res of ['cpu', 'memory']) {
          if (!c.resources?.[kind]?.[res]) errors.push(`${at}: resources.${kind}.${res} is missing`);
        }
      }
    }
    for (const c of pod.containers) {
      const at = `${name}/${c.name}`;
      const port = c.ports?.find((p) => p.name === 'http');
      if (!port) {
        errors.push(`${at}: needs a container port named http`);
        continue;
      }
      const envPort = envOf(c, 'PORT');
      if (envPort === undefined || Number(envPort) !== port.containerPort) {
        errors.push(`${at}: containerPort ${port.containerPort} must equal the PORT env (${envPort ?? 'unset'})`);
      }
      errors.push(...extraPorts(at, role, c));
      for (const [probe, path] of [['livenessProbe', '/health/live'], ['readinessProbe', '/health/ready']] as const) {
        const get = c[probe]?.httpGet;
        if (!get) errors.push(`${at}: ${probe} must be an httpGet probe`);
        else {
          if (get.path !== path) errors.push(`${at}: ${probe} must GET ${path} (got ${get.path})`);
          if (get.port !== 'http' && get.port !== port.containerPort) errors.push(`${at}: ${probe} must target the http port`);
        }
      }
      const entry = role ? `dist/apps/${role}/src/main.js` : undefined;
      // A worker may also be a team's own pool package, built into the image under dist/examples.
      const poolPackage = role === 'worker' && /^dist\/examples\/[a-z0-9-]+\/src\/main\.js$/.test(c.args?.[0] ?? '');
      if (!entry || (c.args?.[0] !== entry && !poolPackage) || (c.command && c.command.length > 0)) {
        errors.push(`${at}: must run the image's node with args [${entry}] (got command ${JSON.stringify(c.command)} args ${JSON.stringify(c.args)})`);
      }
    }
  }
  return errors;
}

/**
 * The ports of their own (docs/operations.md, "Ports"): every role serves /metrics on a port
 * named metrics (ALMANAC_METRICS_PORT), the api serves admin routes on a port named admin
 * (ALMANAC_ADMIN_PORT); no other role declares an admin port. Port names and numbers are unique.
 */
function extraPorts(at: string, role: string | undefined, c: Container): string[] {
  const errors: string[] = [];
  const wanted: [string, string, boolean][] = [['metrics', 'ALMANAC_METRICS_PORT', true], ['admin', 'ALMANAC_ADMIN_PORT', role === 'api']];
  for (const [name, setting, required] of wanted) {
    const port = c.ports?.find((p) => p.name === name);
    const env = envOf(c, setting);
    if (!required) {
      if (port || env !== undefined) errors.push(`${at}: only the api has a ${name} port (${setting})`);
      continue;
    }
    if (!port) errors.push(`${at}: needs a container port named ${name}`);
    else if (env === undefined || Number(env) !== port.containerPort) {
      errors.push(`${at}: containerPort ${name} ${port.containerPort} must equal the ${setting} env (${env ?? 'unset'})`);
    }
  }
  const names = (c.ports ?? []).map((p) => p.name);
  const numbers = (c.ports ?? []).map((p) => p.containerPort);
  if (new Set(names).size !== names.length || new Set(numbers).size !== numbers.length) errors.push(`${at}: container port names and numbers must be unique`);
  return errors;
}

function containerSecurity(at: string, c: Container): string[] {
  const errors: string[] = [];
  const sc = c.securityContext;
  if (sc?.allowPrivilegeEscalation !== false) errors.push(`${at}: allowPrivilegeEscalation must be false`);
  if (sc?.readOnlyRootFilesystem !== true) errors.push(`${at}: readOnlyRootFilesystem must be true`);
  if (!sc?.capabilities?.drop?.includes('ALL')) errors.push(`${at}: capabilities must drop ALL`);
  if (sc?.runAsUser === 0 || sc?.runAsNonRoot === false) errors.push(`${at}: must not run as root`);
  return errors;
}

/** Node writes to /tmp (and a read-only root has none): each app container gets an emptyDir there. */
export function checkWritableTmp(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  for (const w of workloads(objects)) {
    const pod = w.spec.template.spec;
    for (const c of pod.containers) {
      const mount = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
      const volume = mount && pod.volumes?.find((v) => v.name === mount.name);
      if (!volume?.emptyDir || mount?.readOnly) errors.push(`${w.metadata.name}/${c.name}: needs a writable emptyDir at /tmp`);
    }
  }
  return errors;
}

/** One image for every container (apps, initContainers, the migration Job): one build, one tag. */
export function checkImages(objects: KubeObject[]): string[] {
  const images = new Map<string, string[]>();
  for (const w of workloads(objects)) {
    const pod = w.spec.template.spec;
    for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
      const list = images.get(c.image ?? '(none)') ?? [];
      list.push(`${w.metadata.name}/${c.name}`);
      images.set(c.image ?? '(none)', list);
    }
  }
  if (images.size === 1) return [];
  return [`containers use ${images.size} images: ${[...images].map(([i, cs]) => `${i} (${cs.join(', ')})`).join('; ')}`];
}

/**
 * The worker's grace period covers its drain deadline plus a margin: Kubernetes kills the pod
 * after terminationGracePeriodSeconds, whatever the handlers are doing.
 */
export function checkWorkerGracePeriod(objects: KubeObject[], config: Record<string, string>): string[] {
  const errors: string[] = [];
  for (const d of deployments(objects).filter((o) => component(o) === 'worker')) {
    const c = d.spec.template.spec.containers[0];
    const raw = envOf(c, 'ALMANAC_WORKER_SHUTDOWN_MS') ?? config.ALMANAC_WORKER_SHUTDOWN_MS;
    const shutdownMs = raw === undefined ? DEFAULT_WORKER_SHUTDOWN_MS : Number(raw);
    const grace = d.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    if (grace < shutdownMs / 1000 + SHUTDOWN_MARGIN_S) {
      errors.push(`${d.metadata.name}: terminationGracePeriodSeconds ${grace} < ALMANAC_WORKER_SHUTDOWN_MS ${shutdownMs} ms + ${SHUTDOWN_MARGIN_S} s`);
    }
  }
  return errors;
}

/** Every worker Deployment names its pool once, the same way in its label and its env. */
export function checkWorkerPools(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  const seen = new Map<string, string>();
  for (const d of deployments(objects).filter((o) => component(o) === 'worker')) {
    const pool = d.spec.template.metadata?.labels?.['almanac.io/pool'];
    const env = envOf(d.spec.template.spec.containers[0], 'ALMANAC_WORKER_POOLS');
    if (!pool || env !== pool) errors.push(`${d.metadata.name}: pool label ${pool} must equal ALMANAC_WORKER_POOLS ${env}`);
    if (pool && seen.has(pool)) errors.push(`${d.metadata.name}: pool ${pool} is already served by ${seen.get(pool)}`);
    if (pool) seen.set(pool, d.metadata.name);
  }
  return errors;
}

/**
 * Services and PDBs select exactly the pods they mean; every app is scraped through a Service
 * port named "metrics" that reaches its http port; autoscalers point at a Deployment that exists
 * and a KEDA query watches that Deployment's own pool.
 */
export function checkWiring(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  const deps = deployments(objects);
  const podLabels = (d: Workload) => d.spec.template.metadata?.labels;
  const scraped = new Set<string>();
  for (const s of of(objects, 'Service')) {
    const spec = s.spec as ServiceSpec;
    const selected = deps.filter((d) => matches(spec.selector, podLabels(d)));
    if (selected.length !== 1) errors.push(`Service ${s.metadata.name} selects ${selected.length} Deployments (want 1)`);
    for (const p of spec.ports ?? []) {
      // A Service port reaches the container port of its own name: http, metrics or admin.
      if (p.targetPort !== p.name) errors.push(`Service ${s.metadata.name} port ${p.name}: targetPort must be the named container port ${p.name} (got ${p.targetPort})`);
      for (const d of selected) {
        if (!d.spec.template.spec.containers[0]?.ports?.some((c) => c.name === p.targetPort)) {
          errors.push(`Service ${s.metadata.name} port ${p.name}: ${d.metadata.name} has no container port named ${p.targetPort}`);
        }
      }
    }
    // The Service that carries the API carries nothing else: admin and metrics stay inside.
    const names = (spec.ports ?? []).map((p) => p.name);
    if (names.includes('http') && (names.length > 1 || s.metadata.labels?.['almanac.io/metrics'] === 'true')) {
      errors.push(`Service ${s.metadata.name} exposes the API port, so it must expose nothing else (got ${names.join(', ')}${s.metadata.labels?.['almanac.io/metrics'] === 'true' ? ' and the metrics label' : ''})`);
    }
    if (names.includes('admin') && spec.type !== undefined && spec.type !== 'ClusterIP') {
      errors.push(`Service ${s.metadata.name} exposes the admin port outside the cluster (type ${spec.type})`);
    }
    if (names.includes('metrics') && s.metadata.labels?.['almanac.io/metrics'] === 'true') {
      for (const d of selected) scraped.add(d.metadata.name);
    }
  }
  for (const d of deps) if (!scraped.has(d.metadata.name)) errors.push(`${d.metadata.name}: no Service exposes its metrics port for the ServiceMonitor`);
  for (const p of of(objects, 'PodDisruptionBudget')) {
    const selector = (p.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels;
    const selected = deps.filter((d) => matches(selector, podLabels(d)));
    if (selected.length !== 1) errors.push(`PodDisruptionBudget ${p.metadata.name} selects ${selected.length} Deployments (want 1)`);
  }
  for (const d of deps) {
    if (!of(objects, 'PodDisruptionBudget').some((p) => matches((p.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels, podLabels(d)))) {
      errors.push(`${d.metadata.name}: no PodDisruptionBudget`);
    }
  }
  const workers = deps.filter((d) => component(d) === 'worker');
  const scaled = new Set<string>();
  for (const a of [...of(objects, 'ScaledObject'), ...of(objects, 'HorizontalPodAutoscaler')]) {
    const target = (a.spec as { scaleTargetRef?: { name?: string } }).scaleTargetRef?.name;
    const dep = deps.find((d) => d.metadata.name === target);
    if (!dep) {
      errors.push(`${a.kind} ${a.metadata.name} targets missing Deployment ${target}`);
      continue;
    }
    if (scaled.has(dep.metadata.name)) errors.push(`${dep.metadata.name} has two autoscalers`);
    scaled.add(dep.metadata.name);
    if (a.kind === 'ScaledObject') {
      const pool = podLabels(dep)?.['almanac.io/pool'];
      const triggers = (a.spec as { triggers?: { metadata?: { query?: string } }[] }).triggers ?? [];
      for (const t of triggers) {
        // Every pool matcher names this pool (a half-edited copy of another pool's query fails).
        const watched = [...(t.metadata?.query ?? '').matchAll(/(?<![\w])pool\s*=\s*"([^"]*)"/g)].map((m) => m[1]);
        if (t.metadata?.query && (watched.length === 0 || watched.some((w) => w !== pool))) {
          errors.push(`ScaledObject ${a.metadata.name}: query must watch pool="${pool}" (got ${t.metadata.query})`);
        }
      }
    }
  }
  for (const w of workers) if (!scaled.has(w.metadata.name)) errors.push(`${w.metadata.name}: no ScaledObject or HPA`);
  return errors;
}

interface ServiceSpec {
  type?: string;
  selector?: Record<string, string>;
  ports?: { name?: string; port?: number; targetPort?: string | number }[];
}

/**
 * Every ServiceMonitor endpoint scrapes /metrics on a port name that each Service it selects
 * has, and that Service port reaches the container port of the same name: what Prometheus
 * scrapes is really the metrics listener, not the public one (where /metrics is a 404).
 */
export function checkServiceMonitors(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  const deps = deployments(objects);
  for (const m of of(objects, 'ServiceMonitor')) {
    const spec = m.spec as { selector?: { matchLabels?: Record<string, string> }; endpoints?: { port?: string; path?: string }[] };
    const services = of(objects, 'Service').filter((s) => matches(spec.selector?.matchLabels, s.metadata.labels));
    if (services.length === 0) errors.push(`ServiceMonitor ${m.metadata.name} selects no Service`);
    for (const e of spec.endpoints ?? []) {
      if (e.port !== 'metrics') errors.push(`ServiceMonitor ${m.metadata.name}: endpoint must scrape the port named metrics (got ${e.port})`);
      if (e.path !== '/metrics') errors.push(`ServiceMonitor ${m.metadata.name}: endpoint must scrape /metrics (got ${e.path})`);
      for (const s of services) {
        const port = (s.spec as ServiceSpec).ports?.find((p) => p.name === e.port);
        if (!port) {
          errors.push(`ServiceMonitor ${m.metadata.name}: Service ${s.metadata.name} has no port named ${e.port}`);
          continue;
        }
        for (const d of deps.filter((dep) => matches((s.spec as ServiceSpec).selector, dep.spec.template.metadata?.labels))) {
          const target = d.spec.template.spec.containers[0]?.ports?.find((p) => p.name === port.targetPort);
          if (target?.name !== e.port) {
            errors.push(`ServiceMonitor ${m.metadata.name}: Service ${s.metadata.name} port ${e.port} must reach ${d.metadata.name}'s container port named ${e.port} (got ${port.targetPort})`);
          }
        }
      }
    }
  }
  return errors;
}

/** ConfigMaps, Secrets and volumes that pods reference exist in the same set (rendered overlays). */
export function checkReferences(objects: KubeObject[]): string[] {
  const errors: string[] = [];
  const names = (kind: string) => new Set(of(objects, kind).map((o) => o.metadata.name));
  const configMaps = names('ConfigMap');
  const secrets = names('Secret');
  for (const w of workloads(objects)) {
    const pod = w.spec.template.spec;
    for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
      for (const f of c.envFrom ?? []) {
        if (f.configMapRef && !configMaps.has(f.configMapRef.name)) errors.push(`${w.metadata.name}/${c.name}: missing ConfigMap ${f.configMapRef.name}`);
        if (f.secretRef && !secrets.has(f.secretRef.name)) errors.push(`${w.metadata.name}/${c.name}: missing Secret ${f.secretRef.name}`);
      }
    }
    for (const v of pod.volumes ?? []) {
      if (v.configMap && !configMaps.has(v.configMap.name)) errors.push(`${w.metadata.name}: volume ${v.name} needs missing ConfigMap ${v.configMap.name}`);
    }
  }
  return errors;
}
