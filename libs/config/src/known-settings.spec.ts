import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROLE_SETTINGS, TOOL_SETTINGS, unknownSettingWarnings } from './known-settings';
import { SETTING_SECTIONS, SETTINGS } from './settings';

const ROOT = join(__dirname, '../../..');
const DECLARATIONS = join('libs', 'config', 'src', 'settings');

function files(dir: string, keep: (path: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return ['node_modules', 'generated', 'results', 'dist'].includes(name) ? [] : files(path, keep);
    return keep(path) ? [path] : [];
  });
}

function namesIn(paths: string[]): Set<string> {
  return new Set(paths.flatMap((p) => readFileSync(p, 'utf8').match(/ALMANAC_[A-Z0-9_]*[A-Z0-9]/g) ?? []));
}

describe('known settings', () => {
  it('are declared in one section each', () => {
    // SETTINGS spreads the sections: a name in two would silently keep the later declaration.
    const declared = SETTING_SECTIONS.flatMap((s) => Object.keys(s.settings));
    expect(declared.length).toBe(Object.keys(SETTINGS).length);
  });

  it('are exactly the ALMANAC_ variables the roles read', () => {
    const roleCode = ['apps', 'libs'].flatMap((d) =>
      files(join(ROOT, d), (p) => p.endsWith('.ts') && !p.endsWith('.spec.ts') && !p.includes(DECLARATIONS) && !p.endsWith('known-settings.ts') && !p.includes(join('apps', 'api', 'test'))),
    );
    const read = [...namesIn(roleCode)].filter((n) => n !== 'ALMANAC_CONFIG').sort(); // a DI token, not a variable
    expect([...ROLE_SETTINGS].sort()).toEqual(read);
  });

  it('list only tooling variables that the tooling still reads', () => {
    const tooling = ['scripts', 'test', 'bench', 'k8s', '.ci'].flatMap((d) => files(join(ROOT, d), (p) => /\.(ts|js|cjs|sh)$|\/run$/.test(p)));
    const read = namesIn(tooling);
    expect(TOOL_SETTINGS.filter((n) => !read.has(n) || ROLE_SETTINGS.includes(n))).toEqual([]);
  });

  it('report a misspelt setting by name, and nothing for settings, tooling variables or other variables', () => {
    const env = { ALMANAC_PG_ACQUIRE_MS: '100', ALMANAC_PG_ACQUIRE_TIMEOUT_MS: '100', ALMANAC_KEY: 'alm_x', ALMANAC_TEST_PG_URL: 'x', PATH: '/bin' };
    expect(unknownSettingWarnings(env)).toEqual([
      'ALMANAC_PG_ACQUIRE_MS is not a setting Almanac reads; it is ignored (docs/configuration.md lists them)',
    ]);
  });
});
