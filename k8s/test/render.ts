import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { K8S_DIR, parseYaml, YamlDoc } from './files';

/** True when a kubectl binary answers on PATH. CI images may not have one; that is allowed. */
export function kubectlAvailable(): boolean {
  const res = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8', timeout: 20_000 });
  return res.status === 0;
}

const rendered = new Map<string, YamlDoc[]>();

/** `kubectl kustomize <dir>` (offline), parsed and cached; throws with kubectl's message when it fails. */
export function kustomize(relDir: string): YamlDoc[] {
  const cached = rendered.get(relDir);
  if (cached) return cached;
  const res = spawnSync('kubectl', ['kustomize', join(K8S_DIR, relDir)], {
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 32 * 1024 * 1024,
  });
  if (res.status !== 0) throw new Error(`kubectl kustomize ${relDir} failed: ${res.stderr || res.error?.message}`);
  const docs = parseYaml(res.stdout, `kustomize(${relDir})`);
  rendered.set(relDir, docs);
  return docs;
}
