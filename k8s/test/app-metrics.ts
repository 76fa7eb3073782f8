import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

/** `# TYPE name type` lines of a Prometheus text exposition: every registered metric, sampled or not. */
export function parseExposition(text: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1], m[2]);
  return types;
}

/**
 * Fallback when the apps cannot be booted: every `almanac_…` word in the apps' and libraries'
 * sources (specs excluded). A superset (SQL helpers such as almanac_hour match too), so it
 * proves a name exists somewhere, not that it is exported or what type it has.
 */
export function scanSourceForMetricNames(): Set<string> {
  const names = new Set<string>();
  for (const text of sources()) for (const m of text.matchAll(/\balmanac_[a-z0-9_]+/g)) names.add(m[0]);
  return names;
}

/** Label values seen in samples, keyed `metric/label` (histogram series folded into their metric). */
export function seriesLabelValues(text: string): Map<string, Set<string>> {
  const values = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/.exec(line);
    if (!m) continue;
    const metric = m[1].replace(/_(bucket|sum|count)$/, '');
    for (const lv of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      const key = `${metric}/${lv[1]}`;
      if (!values.has(key)) values.set(key, new Set());
      values.get(key)!.add(lv[2]);
    }
  }
  return values;
}

/** Every single-quoted string literal in the apps' and libraries' sources (specs excluded). */
export function scanSourceForLiterals(): Set<string> {
  const literals = new Set<string>();
  for (const text of sources()) for (const m of text.matchAll(/'([A-Za-z0-9_.-]+)'/g)) literals.add(m[1]);
  return literals;
}

function sources(): string[] {
  const out: string[] = [];
  const visit = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) visit(full);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) out.push(readFileSync(full, 'utf8'));
    }
  };
  for (const d of ['apps', 'libs']) visit(join(ROOT, d));
  return out;
}

export interface ExportedMetric {
  /** As the exposition says: counter, gauge, histogram, summary, untyped. */
  type: string;
  labels: string[];
}
