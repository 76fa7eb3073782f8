import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The README's configuration tables name every ALMANAC_ variable the roles read, and nothing
 * they do not: the tables had drifted (a variable renamed in code kept its old name in a
 * message), and nothing checked them. A row may name several variables with a shared stem,
 * `ALMANAC_PROMOTION_BATCH_SIZE` / `_CONCURRENCY`: each suffix replaces the tail of the first name.
 */
const ROOT = join(__dirname, '..');
/** Names in code that are not settings of the roles. */
const NOT_SETTINGS = new Set(['ALMANAC_CONFIG']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'generated' ? [] : sources(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') && !path.includes(`${join('apps', 'api', 'test')}`) ? [path] : [];
  });
}

function namesIn(text: string): Set<string> {
  return new Set(text.match(/ALMANAC_[A-Z0-9_]*[A-Z0-9]/g) ?? []);
}

/** Every name the first cell of the README's table rows gives, shared stems expanded against `known`. */
function readmeNames(readme: string, known: Set<string>): Set<string> {
  const names = new Set<string>();
  for (const row of readme.split('\n').filter((l) => l.startsWith('| `ALMANAC_'))) {
    const cell = row.split('|')[1];
    for (const n of namesIn(cell)) names.add(n);
    const [first, ...suffixes] = [...cell.matchAll(/`(_?[A-Z0-9_]+)`/g)].map((m) => m[1]);
    const parts = first.split('_');
    for (const suffix of suffixes.filter((s) => s.startsWith('_'))) {
      for (let i = 1; i < parts.length; i++) {
        const candidate = parts.slice(0, i).join('_') + suffix;
        if (known.has(candidate)) names.add(candidate);
      }
    }
  }
  return names;
}

describe('README configuration tables', () => {
  const code = new Set(
    [...namesIn(sources(join(ROOT, 'apps')).concat(sources(join(ROOT, 'libs'))).map((f) => readFileSync(f, 'utf8')).join('\n'))].filter(
      (n) => !NOT_SETTINGS.has(n),
    ),
  );
  const readme = readmeNames(readFileSync(join(ROOT, 'README.md'), 'utf8'), code);

  it('name every ALMANAC_ variable the roles read', () => {
    expect([...code].filter((n) => !readme.has(n)).sort()).toEqual([]);
  });

  it('name no variable that nothing reads', () => {
    expect([...readme].filter((n) => !code.has(n)).sort()).toEqual([]);
  });
});
