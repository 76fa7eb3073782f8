import { readSetting } from '@almanac/config';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withGeneratedTables } from './support/config-doc';

/**
 * The tables of docs/configuration.md are generated from the declaration of every variable
 * (libs/config/src/settings), which the roles read through: they had drifted while written by
 * hand (a variable renamed in code kept its old name there), and only names were checked.
 */
const DOC = join(__dirname, '..', 'docs', 'configuration.md');
const REGENERATE = 'npm run generate:config-doc';
/** Set by `npm run generate:config-doc`: write the tables instead of comparing them. */
const WRITE = readSetting(process.env, 'ALMANAC_WRITE_CONFIG_DOC');

/** The first line where two texts differ, for the failure message. */
function firstDifference(committed: string, generated: string): string {
  const a = committed.split('\n');
  const b = generated.split('\n');
  const i = a.findIndex((line, n) => line !== b[n]);
  const at = i === -1 ? a.length : i;
  return `line ${at + 1}:\n  committed: ${JSON.stringify(a[at])}\n  generated: ${JSON.stringify(b[at])}`;
}

describe('docs/configuration.md', () => {
  it(`has the tables the declaration generates (${REGENERATE} writes them)`, () => {
    const committed = readFileSync(DOC, 'utf8');
    const generated = withGeneratedTables(committed);
    if (WRITE) {
      writeFileSync(DOC, generated);
      return;
    }
    if (generated !== committed) {
      throw new Error(
        `docs/configuration.md's tables differ from the declaration in libs/config/src/settings. ` +
          `Regenerate them and commit the result:\n\n  ${REGENERATE}\n\nFirst difference at ${firstDifference(committed, generated)}`,
      );
    }
  });
});
