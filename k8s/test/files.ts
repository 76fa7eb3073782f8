import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const K8S_DIR = resolve(__dirname, '..');

/** Every .yaml/.yml file under k8s/, as paths relative to k8s/ (sorted, so failures read stably). */
export function yamlFiles(dir = K8S_DIR): string[] {
  const out: string[] = [];
  const visit = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) visit(full);
      else if (/\.ya?ml$/.test(e.name)) out.push(relative(K8S_DIR, full));
    }
  };
  visit(dir);
  return out.sort();
}

export interface YamlDoc {
  /** `file#index` for messages. */
  where: string;
  value: unknown;
}

/** Parses a multi-document YAML string; a syntax error throws naming where it is. */
export function parseYaml(text: string, source: string): YamlDoc[] {
  return parseAllDocuments(text).flatMap((doc, i) => {
    if (doc.errors.length) throw new Error(`${source}#${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    return value === null || value === undefined ? [] : [{ where: `${source}#${i}`, value }];
  });
}

export function readYaml(relPath: string): YamlDoc[] {
  return parseYaml(readFileSync(join(K8S_DIR, relPath), 'utf8'), relPath);
}

export function readText(relPath: string): string {
  return readFileSync(join(K8S_DIR, relPath), 'utf8');
}
