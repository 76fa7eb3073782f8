import { readText, readYaml } from './files';
import type { KubeObject } from './validate';

/** Every PromQL expression we ship, with where it lives, for the metric and label checks. */
export interface Query {
  where: string;
  expr: string;
}

export const RULES_FILE = 'monitoring/rules/almanac.rules.yml';
export const RULES_TEST_FILE = 'monitoring/rules/almanac.rules.test.yml';
export const DASHBOARD_FILE = 'monitoring/almanac.dashboard.json';
export const SCALED_OBJECT_FILE = 'worker/scaledobject.yaml';

export function dashboardQueries(): Query[] {
  const dash = JSON.parse(readText(DASHBOARD_FILE)) as { panels: { title: string; targets?: { expr?: string }[] }[] };
  return dash.panels.flatMap((p) => (p.targets ?? []).map((t, i) => ({ where: `dashboard panel "${p.title}" target ${i}`, expr: t.expr ?? '' })));
}

/**
 * Series the recording rules make, with the labels they keep: a rule named `pool:…` keeps `pool`
 * (Prometheus' level:metric:operations naming, the level being the labels aggregated by).
 */
export function recordedSeries(): Map<string, { metric: string; labels: readonly string[] }> {
  const rules = readYaml(RULES_FILE)[0].value as { groups: { rules: { record?: string }[] }[] };
  const names = rules.groups.flatMap((g) => g.rules.flatMap((r) => (r.record ? [r.record] : [])));
  return new Map(names.map((name) => [name, { metric: name, labels: name.split(':')[0].split('_').filter(Boolean) }]));
}

export function ruleQueries(): Query[] {
  const rules = readYaml(RULES_FILE)[0].value as { groups: { rules: { alert?: string; record?: string; expr: string }[] }[] };
  return rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: r.expr })));
}

export function scaledObjectQueries(objects: KubeObject[]): Query[] {
  return objects
    .filter((o) => o.kind === 'ScaledObject')
    .flatMap((o) => ((o.spec as { triggers?: { metadata?: { query?: string } }[] }).triggers ?? [])
      .flatMap((t) => (t.metadata?.query ? [{ where: `ScaledObject ${o.metadata.name}`, expr: t.metadata.query }] : [])));
}

/** Dashboard, alert rules and the worker ScaledObject template. */
export function allQueries(): Query[] {
  const scaled = readYaml(SCALED_OBJECT_FILE).map((d) => d.value as KubeObject);
  return [...dashboardQueries(), ...ruleQueries(), ...scaledObjectQueries(scaled)];
}
