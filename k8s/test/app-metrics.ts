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
  const visit = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) visit(full);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) {
        for (const m of readFileSync(full, 'utf8').matchAll(/\balmanac_[a-z0-9_]+/g)) names.add(m[0]);
      }
    }
  };
  for (const d of ['apps', 'libs']) visit(join(ROOT, d));
  return names;
}

export interface ExportedMetric {
  /** As the exposition says: counter, gauge, histogram, summary, untyped. */
  type: string;
  labels: string[];
}
