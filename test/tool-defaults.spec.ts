import { SETTINGS } from '@almanac/config';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Scripts, the initContainer, .ci/run and the benchmarks run before or apart from the built code,
 * so they parse their variables themselves (`env.X || 3000`, `${X:-3999}`). For the variables
 * only tooling reads, the default they write must be the one libs/config declares (and
 * docs/configuration.md shows). Role variables a bench sets for its children are its choice.
 */
const ROOT = join(__dirname, '..');
const PLACES = ['scripts', 'k8s/base', 'bench', '.ci/run'];
const FALLBACK = [
  /env(?:\.|\[')([A-Z][A-Z0-9_]+)'?\]?\s*(?:\|\||\?\?)\s*('[^']*'|"[^"]*"|[\d_]+)/g, // JS: env.X || 'lit'
  /\$\{([A-Z][A-Z0-9_]+):-([^}]*)\}/g, // shell: ${X:-lit}
];

function files(path: string): string[] {
  const full = join(ROOT, path);
  if (statSync(full).isFile()) return [full];
  return readdirSync(full, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'results' ? [] : files(join(path, e.name))) : /\.(js|ts|cjs)$/.test(e.name) ? [join(full, e.name)] : [],
  );
}

/** Every `name → literal` fallback the tooling writes, with where. */
function toolingFallbacks(): { name: string; literal: string; at: string }[] {
  return PLACES.flatMap(files).flatMap((file) =>
    FALLBACK.flatMap((re) => [...readFileSync(file, 'utf8').matchAll(re)].map((m) => ({ name: m[1], literal: m[2], at: relative(ROOT, file) }))),
  );
}

describe("the tooling's own defaults", () => {
  it('equal the declared default of every variable only tooling reads', () => {
    const declared = SETTINGS as Record<string, { readers: readonly string[]; default?: unknown } | undefined>;
    // A variable declared without a default has one computed by its reader (defaultText says how).
    const found = toolingFallbacks().filter(({ name }) => declared[name]?.readers.every((r) => r === 'tool') && declared[name]?.default !== undefined);
    expect(found.map((f) => f.name)).toEqual(expect.arrayContaining(['ALMANAC_CI_START_PORT', 'ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S', 'ALMANAC_START_SERVICES']));
    const differing = found.flatMap(({ name, literal, at }) => {
      const value = String(declared[name]?.default);
      const written = literal.replace(/^['"]|['"]$/g, '').replace(/_/g, '');
      return written === value ? [] : [`${at}: ${name} falls back to ${literal}, declared ${value}`];
    });
    expect(differing).toEqual([]);
  });
});
