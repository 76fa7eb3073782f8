import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';

const CLIENT = join(__dirname, '..');
const BIN = join(__dirname, '../../../node_modules/.bin');

/**
 * @almanac/client as it would be published (issue 34, item 4): `npm pack` builds dist/ (CommonJS
 * and declarations) and packs it; unpacked into a clean folder outside the repo, it is required
 * and type-checked as a user's project would.
 */
describe('@almanac/client, packed', () => {
  it('packs dist/ with its declarations, loads from a clean folder and type-checks a call', () => {
    const out = mkdtempSync(join(tmpdir(), 'almanac-client-pack-'));
    try {
      execFileSync('npm', ['pack', '--pack-destination', out, '--silent'], { cwd: CLIENT, env: { ...process.env, PATH: `${BIN}:${process.env.PATH}` }, stdio: 'pipe' });
      const [tarball] = readdirSync(out).filter((f) => f.endsWith('.tgz'));
      const project = join(out, 'project');
      const installed = join(project, 'node_modules/@almanac/client');
      mkdirSync(installed, { recursive: true });
      execFileSync('tar', ['-xzf', join(out, tarball), '-C', installed, '--strip-components=1']);
      const files = execFileSync('tar', ['-tzf', join(out, tarball)]).toString().split('\n').filter(Boolean);
      expect(files).toEqual(expect.arrayContaining(['package/dist/index.js', 'package/dist/index.d.ts', 'package/package.json', 'package/README.md']));
      expect(files.filter((f) => f.startsWith('package/src/') || f.endsWith('.spec.ts'))).toEqual([]);

      const loaded = execFileSync(process.execPath, ['-e', "const c = require('@almanac/client'); console.log(typeof c.createClient, typeof c.createAdminClient, typeof c.NotFoundError)"], { cwd: project }).toString().trim();
      expect(loaded).toBe('function function function');

      writeFileSync(join(project, 'use.ts'), `
        import { createClient, type JobDetail } from '@almanac/client';
        const almanac = createClient({ baseUrl: 'http://localhost:3000', apiKey: 'alm_x' });
        export async function use(): Promise<JobDetail['state']> {
          await almanac.jobs.create({ kind: 'noop', key: 'k', runAt: '2027-01-01T09:00:00Z' });
          const runs = await almanac.schedules.runs('1', { date: '2026-12-01', limit: 5 });
          void runs.items[0]?.lateMs;
          return (await almanac.jobs.findByKey('k')).state;
        }
      `);
      const program = ts.createProgram([join(project, 'use.ts')], {
        strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16,
        lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], types: [], skipLibCheck: false,
      });
      expect(ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
      rmSync(join(CLIENT, 'dist'), { recursive: true, force: true }); // only the tarball keeps it
    }
  }, 60_000);
});
