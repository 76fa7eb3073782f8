import { isDeepStrictEqual } from 'node:util';
import { readText, readYaml, yamlFiles, YamlDoc } from './test/files';
import { seriesIndex, TARGET_LABELS } from './test/metric-catalog';
import {
  checkDeployments,
  checkImages,
  checkReferences,
  checkServiceMonitors,
  checkWiring,
  checkWorkerGracePeriod,
  checkWorkerPools,
  checkWritableTmp,
  type PodSpec,
} from './test/project-checks';
import { literalValues, promqlRefs } from './test/promql';
import { DASHBOARD_FILE, dashboardQueries, Query, recordedSeries, RULES_FILE, RULES_TEST_FILE, ruleQueries, SCALED_OBJECT_FILE, scaledObjectQueries } from './test/queries';
import { checkInitContainerEnv } from './test/pod-env';
import { kubectlAvailable, kustomize } from './test/render';
import { checkScalingFallbacks, checkScalingQueries } from './test/scaling-checks';
import { checkRuleGroups, isKubeObject, KubeObject, validateObject } from './test/validate';
import { checkWorkerStartupBudget } from './test/worker-startup';

/**
 * Checks everything under k8s/ without a cluster: every YAML parses and every Kubernetes object
 * passes the API schema (kubernetes-models) or our CRD shape checks; Almanac's own rules hold
 * (probes, limits, non-root, one image, ports = PORT / ALMANAC_METRICS_PORT / ALMANAC_ADMIN_PORT,
 * worker grace period, pools, wiring, a public Service with the API port only, a ServiceMonitor
 * that scrapes the metrics port); every
 * PromQL query names only metrics and labels from test/metric-catalog.ts (which
 * k8s/metrics.spec.ts checks against the apps' real /metrics).
 */

const OVERLAYS = ['overlays/example'];
/** Every kustomization that must render on its own (overlays render them all together too). */
const KUSTOMIZATIONS = ['base', 'worker', 'monitoring', ...OVERLAYS];

/** YAML files that are not Kubernetes objects, by what they are. */
function fileRole(file: string, docs: YamlDoc[]): string | undefined {
  const first = docs[0]?.value as Record<string, unknown> | undefined;
  if (/(^|\/)kustomization\.yaml$/.test(file)) return ['Kustomization', 'Component'].includes(String(first?.kind)) ? 'kustomization' : undefined;
  if (/(^|\/)kustomizeconfig\.yaml$/.test(file)) return first && 'nameReference' in first ? 'kustomize-config' : undefined;
  if (file === RULES_FILE) return 'prometheus-rules';
  if (file === RULES_TEST_FILE) return 'promtool-tests';
  if (file === 'monitoring/prometheus.local.yml') return 'prometheus-config';
  return undefined;
}

const rawFiles = yamlFiles();
const rawDocs = new Map(rawFiles.map((f) => [f, readYaml(f)]));
const rawObjects: { where: string; object: KubeObject }[] = [];
for (const [file, docs] of rawDocs) {
  if (fileRole(file, docs)) continue;
  for (const d of docs) if (isKubeObject(d.value)) rawObjects.push({ where: d.where, object: d.value });
}

function configFromEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) out[m[1]] = m[2].trim();
  }
  return out;
}

/** Problems with one query: unknown series, or labels that none of its series carry. */
function queryProblems(q: Query): string[] {
  const index = new Map([...seriesIndex(), ...recordedSeries()]);
  const refs = promqlRefs(q.expr);
  const problems: string[] = [];
  if (refs.series.length === 0) problems.push(`${q.where}: names no metric`);
  const known = new Set<string>([...TARGET_LABELS, ...refs.created]);
  for (const s of refs.series) {
    const entry = index.get(s);
    if (!entry) problems.push(`${q.where}: ${s} is not in k8s/test/metric-catalog.ts`);
    else entry.labels.forEach((l) => known.add(l));
  }
  for (const m of refs.matchers) {
    const entry = index.get(m.series);
    if (entry && !entry.labels.includes(m.label) && !TARGET_LABELS.includes(m.label)) problems.push(`${q.where}: ${m.series} has no label ${m.label}`);
  }
  for (const l of refs.grouping) if (!known.has(l)) problems.push(`${q.where}: groups by ${l}, which none of its metrics carry`);
  return problems;
}

describe('raw YAML under k8s/', () => {
  it('finds the files it is meant to check', () => {
    expect(rawFiles).toEqual(expect.arrayContaining([
      'base/kustomization.yaml', 'base/api.yaml', 'worker/worker.yaml', RULES_FILE, RULES_TEST_FILE,
      'monitoring/prometheusrule.yaml', 'overlays/example/kustomization.yaml',
    ]));
  });

  it('holds only Kubernetes objects and the known non-object files', () => {
    const unknown = [...rawDocs].flatMap(([file, docs]) =>
      fileRole(file, docs) ? [] : docs.filter((d) => !isKubeObject(d.value)).map((d) => d.where));
    expect(unknown).toEqual([]);
  });

  it('validates every Kubernetes object (schema for built-in kinds, shape for CRDs)', () => {
    const problems = rawObjects.flatMap(({ where, object }) => validateObject(object).map((e) => `${where} ${object.kind}/${object.metadata?.name}: ${e}`));
    expect(problems).toEqual([]);
    expect(rawObjects.length).toBeGreaterThan(10);
  });

  it('keeps every Deployment safe and consistent: probes, limits, non-root, ports = PORT, one image', () => {
    const objects = rawObjects.map((r) => r.object);
    const config = configFromEnvFile(readText('base/almanac.env'));
    expect([
      ...checkDeployments(objects),
      ...checkWritableTmp(objects),
      ...checkImages(objects),
      ...checkWorkerGracePeriod(objects, config),
      ...checkWorkerPools(objects),
      ...checkServiceMonitors(objects),
      ...checkScalingQueries(objects),
      ...checkScalingFallbacks(objects),
      ...checkWorkerStartupBudget(objects),
      ...checkInitContainerEnv(objects),
    ]).toEqual([]);
  });
});

describe('the project checks catch what they are for', () => {
  const clone = <T>(v: T): T => structuredClone(v);
  const worker = (): KubeObject => clone(rawObjects.find((r) => r.object.kind === 'Deployment' && r.object.metadata.name === 'almanac-worker')!.object);
  type Pod = { spec: { template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } } } };
  const pod = (o: KubeObject) => (o as unknown as Pod).spec.template.spec;

  it('passes the shipped worker', () => {
    expect(checkDeployments([worker()])).toEqual([]);
  });

  it('flags a missing probe, a missing limit, root, a port that is not PORT, a wrong entry point', () => {
    const d = worker();
    const c = pod(d).containers[0];
    delete c.readinessProbe;
    (c.resources as { limits: Record<string, string> }).limits = { cpu: '1' };
    (pod(d).securityContext as Record<string, unknown>).runAsNonRoot = false;
    (c.ports as { containerPort: number }[])[0].containerPort = 8080;
    c.args = ['dist/apps/api/src/main.js'];
    expect(checkDeployments([d])).toEqual([
      'almanac-worker: pod securityContext.runAsNonRoot must be true',
      'almanac-worker/worker: resources.limits.memory is missing',
      'almanac-worker/worker: containerPort 8080 must equal the PORT env (3000)',
      'almanac-worker/worker: readinessProbe must be an httpGet probe',
      'almanac-worker/worker: must run the image\'s node with args [dist/apps/worker/src/main.js] (got command undefined args ["dist/apps/api/src/main.js"])',
    ]);
  });

  it('flags a role without its metrics port, a port that disagrees with its setting, and an admin port outside the api', () => {
    const d = worker();
    const c = pod(d).containers[0] as { ports: { name: string; containerPort: number }[]; env: { name: string; value: string }[] };
    c.ports = c.ports.filter((p) => p.name !== 'metrics');
    expect(checkDeployments([d])).toEqual(['almanac-worker/worker: needs a container port named metrics']);
    c.ports.push({ name: 'metrics', containerPort: 9999 }, { name: 'admin', containerPort: 3001 });
    expect(checkDeployments([d])).toEqual([
      'almanac-worker/worker: containerPort metrics 9999 must equal the ALMANAC_METRICS_PORT env (3002)',
      'almanac-worker/worker: only the api has a admin port (ALMANAC_ADMIN_PORT)',
    ]);
  });

  it('flags a public Service that carries more than the API, and a ServiceMonitor that misses the metrics port', () => {
    const objects = rawObjects.map((r) => clone(r.object));
    const api = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'almanac-api')!;
    (api.spec as { ports: object[] }).ports.push({ name: 'metrics', port: 3002, targetPort: 'metrics' });
    expect(checkWiring(objects)).toContain('Service almanac-api exposes the API port, so it must expose nothing else (got http, metrics)');
    const internal = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'almanac-api-internal')!;
    const metricsPort = (internal.spec as { ports: { name: string; targetPort: string }[] }).ports.find((p) => p.name === 'metrics')!;
    metricsPort.targetPort = 'http';
    expect(checkServiceMonitors(objects)).toEqual([
      "ServiceMonitor almanac: Service almanac-api-internal port metrics must reach almanac-api's container port named metrics (got http)",
    ]);
    expect(checkWiring(objects)).toContain('Service almanac-api-internal port metrics: targetPort must be the named container port metrics (got http)');
  });

  it('flags a ScaledObject whose query is not the one for its pool, lead and window, or whose ceiling disagrees with its workers', () => {
    const objects = rawObjects.map((r) => clone(r.object));
    const so = objects.find((o) => o.kind === 'ScaledObject')!;
    expect(checkScalingQueries(objects)).toEqual([]);
    const spec = so.spec as { maxReplicaCount: number; triggers: { metadata: { query: string } }[] };
    spec.triggers[0].metadata.query = spec.triggers[0].metadata.query.replace('* 300', '* 600');
    spec.maxReplicaCount = 30;
    (so.metadata as { annotations: Record<string, string> }).annotations['almanac.io/scaling-lead'] = '7m';
    const problems = checkScalingQueries(objects);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toBe('ScaledObject almanac-worker: almanac_jobs_due has no window 7m, 12m (it exports 1m, 5m, 10m, 15m, 1h)');
    expect(problems[1]).toMatch(/^ScaledObject almanac-worker: query differs from `node k8s\/worker\/scaling-query.js --pool default --lead 7m --window 5m`/);
    expect(problems[2]).toBe("ScaledObject almanac-worker: maxReplicaCount 30 differs from almanac-worker's ALMANAC_WORKER_MAX_REPLICAS 20");
    const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler')!;
    (hpa.spec as { maxReplicas: number }).maxReplicas = 25;
    expect(checkScalingQueries(objects)).toContain("HorizontalPodAutoscaler almanac-worker: maxReplicas 25 differs from almanac-worker's ALMANAC_WORKER_MAX_REPLICAS 20");
  });

  it('flags a ScaledObject whose fallback would take replicas from a busy pool while Prometheus cannot answer', () => {
    const objects = rawObjects.map((r) => clone(r.object));
    const so = objects.find((o) => o.kind === 'ScaledObject')!;
    expect(checkScalingFallbacks(objects)).toEqual([]);
    const fallback = (so.spec as { fallback: { behavior?: string } }).fallback;
    delete fallback.behavior;
    expect(checkScalingFallbacks(objects)).toEqual(['ScaledObject almanac-worker: fallback.behavior must be currentReplicasIfHigher or currentReplicas (got none)']);
    fallback.behavior = 'static';
    expect(checkScalingFallbacks(objects)).toEqual(['ScaledObject almanac-worker: fallback.behavior must be currentReplicasIfHigher or currentReplicas (got static)']);
    fallback.behavior = 'currentReplica';
    expect(validateObject(so)).toEqual(['spec.fallback.behavior must be one of static, currentReplicas, currentReplicasIfHigher, currentReplicasIfLower']);
  });

  it('flags a worker whose startupProbe would kill it while it applies its kind migrations', () => {
    const d = worker();
    expect(checkWorkerStartupBudget([d])).toEqual([]);
    const probe = pod(d).containers[0].startupProbe as { periodSeconds: number; failureThreshold: number };
    Object.assign(probe, { periodSeconds: 2, failureThreshold: 30 });
    expect(checkWorkerStartupBudget([d])).toEqual([
      'almanac-worker: startupProbe allows 60 s; a worker applies its kind migrations before it listens and needs 300 s (lock wait 30 s + migrations 240 s + boot 30 s)',
    ]);
    delete pod(d).containers[0].startupProbe;
    expect(checkWorkerStartupBudget([d])).toHaveLength(1);
  });

  it('flags an initContainer that does not read the ConfigMap and Secret its app container reads', () => {
    const d = worker();
    expect(checkInitContainerEnv([d])).toEqual([]);
    const init = (pod(d).initContainers as { envFrom: object[] }[])[0];
    init.envFrom = [{ secretRef: { name: 'almanac-secrets' } }];
    expect(checkInitContainerEnv([d])).toEqual([
      'almanac-worker/wait-for-schema: envFrom [{"secretRef":{"name":"almanac-secrets"}}] differs from the app container\'s [{"configMapRef":{"name":"almanac-config"}},{"secretRef":{"name":"almanac-secrets"}}]',
    ]);
  });

  it('flags a grace period shorter than the drain deadline plus margin, and a second image', () => {
    const d = worker();
    // 39 s left only ~5 s after the deadline, less than the drain's own bounded waits after it.
    pod(d).terminationGracePeriodSeconds = 39;
    expect(checkWorkerGracePeriod([d], { ALMANAC_WORKER_SHUTDOWN_MS: '25000' })).toEqual([
      'almanac-worker: terminationGracePeriodSeconds 39 < ALMANAC_WORKER_SHUTDOWN_MS 25000 ms + 15 s',
    ]);
    pod(d).terminationGracePeriodSeconds = 40;
    expect(checkWorkerGracePeriod([d], { ALMANAC_WORKER_SHUTDOWN_MS: '25000' })).toEqual([]);
    const other = worker();
    pod(other).containers[0].image = 'almanac:other';
    expect(checkImages([worker(), other])).toHaveLength(1);
  });
});

describe('rendered overlays (kubectl kustomize)', () => {
  const haveKubectl = kubectlAvailable();
  if (!haveKubectl) {
    // Not a failure: CI images need not carry kubectl. The raw checks above still ran.
    console.warn('kubectl is not on PATH: skipping `kubectl kustomize` rendering; raw manifests were still checked');
  }
  const maybe = haveKubectl ? it : it.skip;

  maybe.each(KUSTOMIZATIONS)('%s renders', (dir) => {
    expect(kustomize(dir).length).toBeGreaterThan(0);
  });

  maybe.each(OVERLAYS)('%s: every rendered object validates and the Almanac rules hold', (dir) => {
    const objects = kustomize(dir).map((d) => d.value).filter(isKubeObject);
    const problems = objects.flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`));
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('almanac-config'));
    const config = (configMap?.data ?? {}) as Record<string, string>;
    expect([
      ...problems,
      ...checkDeployments(objects),
      ...checkWritableTmp(objects),
      ...checkImages(objects),
      ...checkWorkerGracePeriod(objects, config),
      ...checkWorkerPools(objects),
      ...checkWiring(objects),
      ...checkReferences(objects),
      ...checkServiceMonitors(objects),
      ...checkScalingQueries(objects),
      ...checkScalingFallbacks(objects),
      ...checkWorkerStartupBudget(objects),
      ...checkInitContainerEnv(objects),
    ]).toEqual([]);
    // The public Service carries the API only; metrics and admin have an internal one.
    const services = objects.filter((o) => o.kind === 'Service');
    const ports = (name: string) => (services.find((o) => o.metadata.name === name)?.spec as { ports?: { name: string }[] } | undefined)?.ports?.map((p) => p.name);
    expect(ports('almanac-api')).toEqual(['http']);
    expect(ports('almanac-api-internal')?.sort()).toEqual(['admin', 'metrics']);
    expect(services.filter((o) => ports(o.metadata.name)?.includes('admin')).map((o) => o.metadata.name)).toEqual(['almanac-api-internal']);
    // The example deploys every role, the migration Job and two pools.
    const roles = objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.labels?.['app.kubernetes.io/component']);
    expect(new Set(roles)).toEqual(new Set(['api', 'promoter', 'dispatcher', 'worker']));
    expect(roles.filter((r) => r === 'worker').length).toBeGreaterThanOrEqual(3);
    // The reports pool comes from its own package (a kustomize Component), with its entry point.
    const reports = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'almanac-worker-reports') as
      | { spec: { template: { spec: PodSpec } } }
      | undefined;
    expect(reports?.spec.template.spec.containers[0].args).toEqual(['dist/examples/reports-pool/src/main.js']);
    // Its handler writes under REPORTS_DIR, and the root filesystem is read-only: a writable volume is mounted there.
    const reportsPod = reports!.spec.template.spec;
    const reportsDir = reportsPod.containers[0].env?.find((e) => e.name === 'REPORTS_DIR')?.value;
    const mount = reportsPod.containers[0].volumeMounts?.find((m) => m.mountPath === reportsDir);
    expect({ reportsDir, mount: mount && !mount.readOnly, volume: reportsPod.volumes?.some((v) => v.name === mount?.name) })
      .toEqual({ reportsDir: '/var/lib/reports', mount: true, volume: true });
    expect(objects.filter((o) => o.kind === 'Job').map((o) => o.metadata.name)).toEqual(['almanac-migrate']);
    // Argo CD: the migration Job runs after the ConfigMap and Secret it reads exist, before the Deployments. As a
    // PreSync hook it ran before Argo made the hash-named ConfigMap, and waited for it to its deadline (review).
    const annotations = (o: { metadata: { annotations?: Record<string, string> } } | undefined) => o?.metadata.annotations ?? {};
    const wave = (o: { metadata: { annotations?: Record<string, string> } } | undefined) => Number(annotations(o)['argocd.argoproj.io/sync-wave'] ?? 0);
    const job = objects.find((o) => o.kind === 'Job');
    const read = ((job?.spec as { template: { spec: PodSpec } }).template.spec.containers[0].envFrom ?? []).map((e) => e.configMapRef?.name ?? e.secretRef?.name);
    expect(annotations(job)['argocd.argoproj.io/hook']).toBe('Sync');
    for (const name of read) expect([name, wave(objects.find((o) => o.metadata.name === name))]).toEqual([name, wave(job) - 1]);
    expect(objects.filter((o) => o.kind === 'Deployment').every((d) => wave(d) > wave(job))).toBe(true);
    expect(new Set(objects.map((o) => (o.metadata as { namespace?: string }).namespace ?? '(cluster)'))).toEqual(new Set(['almanac', '(cluster)']));
  });
});

describe('alert rules', () => {
  const rules = readYaml(RULES_FILE)[0].value as { groups: { rules: { alert?: string }[] }[] };
  const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).filter((a): a is string => !!a);

  it('are well-formed rule groups', () => {
    expect(checkRuleGroups(rules.groups, RULES_FILE)).toEqual([]);
  });

  it('cover what operators asked for', () => {
    expect(alerts.sort()).toEqual([
      'AlmanacDeadJobsIncreasing',
      'AlmanacDispatchLagHigh',
      'AlmanacKindNotRunHere',
      'AlmanacKindUnserved',
      'AlmanacOverdueRequeues',
      'AlmanacPoolNotConsumed',
      'AlmanacPromotionSweepFailing',
      'AlmanacPromotionSweepNotRunning',
      'AlmanacRedisDown',
      'AlmanacRedisMemoryHigh',
      'AlmanacRetentionBehind',
      'AlmanacRetentionSweepFailing',
      'AlmanacScheduleMissed',
      'AlmanacSpikeBeyondCapacity',
      'AlmanacTenantLagHigh',
      'AlmanacValuesSetAside',
    ]);
  });

  it('are exactly what the PrometheusRule carries (run `node k8s/monitoring/sync-rules.js` after editing)', () => {
    const pr = readYaml('monitoring/prometheusrule.yaml')[0].value as { spec: { groups: unknown } };
    expect(isDeepStrictEqual(pr.spec.groups, rules.groups)).toBe(true);
  });

  it('each have a promtool unit test', () => {
    const tests = readYaml(RULES_TEST_FILE)[0].value as {
      rule_files: string[];
      tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
    };
    expect(tests.rule_files).toEqual(['almanac.rules.yml']);
    const firing = new Set(tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    const quiet = new Set(tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length === 0).map((a) => a.alertname)));
    expect(alerts.filter((a) => !firing.has(a) || !quiet.has(a))).toEqual([]);
  });

  it('are unit-tested against the worker ScaledObject\'s own query', () => {
    const so = readYaml(SCALED_OBJECT_FILE).map((d) => d.value as KubeObject).find((o) => o.kind === 'ScaledObject')!;
    const query = (so.spec as { triggers: { metadata: { query: string } }[] }).triggers[0].metadata.query;
    const tests = readYaml(RULES_TEST_FILE)[0].value as { tests: { promql_expr_test?: { expr: string }[] }[] };
    const exprs = tests.tests.flatMap((t) => (t.promql_expr_test ?? []).map((e) => e.expr));
    expect(exprs.filter((e) => e.includes('"term", "coming"'))).toEqual(expect.arrayContaining([query]));
    expect(exprs.filter((e) => e.includes('"term", "coming"') && e !== query)).toEqual([]);
  });

  it('link to a runbook section that exists in docs/operations.md', () => {
    const doc = readText('../docs/operations.md').toLowerCase();
    expect(alerts.filter((a) => !doc.includes(`### ${a.toLowerCase()}`))).toEqual([]);
  });
});

describe('Grafana dashboard', () => {
  const dash = JSON.parse(readText(DASHBOARD_FILE)) as {
    uid: string;
    templating: { list: { name: string; type: string }[] };
    panels: { id: number; type: string; title: string; datasource?: { uid: string }; targets?: { refId: string; expr?: string }[] }[];
  };

  it('has unique panel ids, a Prometheus datasource variable, and a query on every panel', () => {
    const ids = dash.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dash.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource' }));
    const graphs = dash.panels.filter((p) => p.type !== 'row');
    expect(graphs.filter((p) => !p.targets?.length || p.datasource?.uid !== '${datasource}').map((p) => p.title)).toEqual([]);
  });

  it('shows every catalogued metric somewhere', () => {
    const used = new Set(dashboardQueries().flatMap((q) => promqlRefs(q.expr).series.map((s) => seriesIndex().get(s)?.metric)));
    const catalog = [...new Set([...seriesIndex().values()].map((e) => e.metric))];
    expect(catalog.filter((m) => !used.has(m))).toEqual([]);
  });
});

describe('PromQL in dashboards, alerts and KEDA triggers', () => {
  it('reads metric names and labels out of an expression', () => {
    expect(promqlRefs('histogram_quantile(0.99, sum by (pool, le) (rate(almanac_dispatch_lag_seconds_bucket[$__rate_interval]))) > 1e3')).toEqual({
      series: ['almanac_dispatch_lag_seconds_bucket'], matchers: [], grouping: ['pool', 'le'], created: [],
    });
    expect(promqlRefs('max by (queue) (x{queue=~"pool-.+",state="a,b"}) > 0 and on (queue) y offset 5m == 0 or vector(0)')).toEqual({
      series: ['x', 'y'],
      matchers: [{ series: 'x', label: 'queue', op: '=~', value: 'pool-.+' }, { series: 'x', label: 'state', op: '=', value: 'a,b' }],
      grouping: ['queue'], created: [],
    });
    expect(promqlRefs('sum by (pool) (label_replace(rate(x[1m]), "pool", "$1", "w", "(.+)")) / on (pool) max(label_replace(y, "term", "a", "", ""))').created)
      .toEqual(['pool', 'term']);
  });

  it('reads the literal values a matcher selects', () => {
    expect(literalValues({ op: '=', value: 'ok' })).toEqual(['ok']);
    expect(literalValues({ op: '=~', value: 'waiting|active' })).toEqual(['waiting', 'active']);
    expect(literalValues({ op: '=~', value: 'pool-.+' })).toEqual([]);
    expect(literalValues({ op: '!=', value: 'ok' })).toEqual([]);
  });

  it('names only catalogued metrics and their labels', () => {
    const objects = rawObjects.map((r) => r.object);
    const queries = [...dashboardQueries(), ...ruleQueries(), ...scaledObjectQueries(objects)];
    expect(queries.length).toBeGreaterThan(20);
    expect(queries.flatMap(queryProblems)).toEqual([]);
  });

  it('catches a misspelt metric or label', () => {
    expect(queryProblems({ where: 'q', expr: 'sum by (tiers) (rate(almanac_jobs_ingest_total[5m]))' })).toEqual([
      'q: almanac_jobs_ingest_total is not in k8s/test/metric-catalog.ts',
      'q: groups by tiers, which none of its metrics carry',
    ]);
    expect(queryProblems({ where: 'q', expr: 'almanac_queue_jobs{pool="x"}' })).toEqual(['q: almanac_queue_jobs has no label pool']);
  });
});
