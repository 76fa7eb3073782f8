import { ROLE_SETTINGS } from '@almanac/platform';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The configuration tables (docs/configuration.md) name every ALMANAC_ variable the roles read (ROLE_SETTINGS,
 * which libs/config/src/known-settings.spec.ts keeps equal to the code), and nothing
 * else: the tables had drifted (a variable renamed in code kept its old name in a message), and
 * nothing checked them. A row may name several variables with a shared stem,
 * `ALMANAC_PROMOTION_BATCH_SIZE` / `_CONCURRENCY`: each suffix replaces the tail of the first name.
 */
const ROOT = join(__dirname, '..');

function namesIn(text: string): Set<string> {
  return new Set(text.match(/ALMANAC_[A-Z0-9_]*[A-Z0-9]/g) ?? []);
}

/** Every name the first cell of the tables' rows gives, shared stems expanded against `known`. */
function tableNames(doc: string, known: Set<string>): Set<string> {
  const names = new Set<string>();
  for (const row of doc.split('\n').filter((l) => l.startsWith('| `ALMANAC_'))) {
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

describe('docs/configuration.md tables', () => {
  const code = new Set(ROLE_SETTINGS);
  const documented = tableNames(readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8'), code);

  it('name every ALMANAC_ variable the roles read', () => {
    expect([...code].filter((n) => !documented.has(n)).sort()).toEqual([]);
  });

  it('name no variable that nothing reads', () => {
    expect([...documented].filter((n) => !code.has(n)).sort()).toEqual([]);
  });
});
