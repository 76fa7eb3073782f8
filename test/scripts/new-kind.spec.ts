import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { HandlerDefinition } from '@almanac/kinds';
import { runTwice } from '@almanac/testing/double-run';

const ROOT = join(__dirname, '../..');

describe('npm run new:kind', () => {
  // Inside the repository, so the scaffold's imports resolve as they will in apps/worker.
  const dir = join(ROOT, 'test', `.tmp-new-kind-${process.pid}`);
  const newKind = (...args: string[]) => execFileSync(process.execPath, [join(ROOT, 'scripts/new-kind.js'), ...args, '--dir', dir], { encoding: 'utf8' });

  beforeAll(() => {
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(ROOT, 'apps/worker/src/handlers/index.ts'), join(dir, 'index.ts'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('scaffolds a handler with its schema and double-run spec, adds it to the handler list, and the scaffold passes the kit', async () => {
    expect(newKind('invoice-reminder', '--pool', 'billing')).toContain('added invoiceReminderHandler to');
    expect(existsSync(join(dir, 'invoice-reminder.handler.spec.ts'))).toBe(true);
    const index = readFileSync(join(dir, 'index.ts'), 'utf8');
    expect(index).toContain("import { invoiceReminderHandler } from './invoice-reminder.handler';");
    expect(index).toMatch(/const HANDLERS: HandlerDefinition\[\] = \[[^\]]*, invoiceReminderHandler\];/);
    const spec = readFileSync(join(dir, 'invoice-reminder.handler.spec.ts'), 'utf8');
    expect(spec).toContain('it.each(DOUBLE_RUN_MODES)');
    expect(spec).toContain("throw new Error('TODO: count the invoice-reminder effect')"); // red until its author counts

    const { invoiceReminderHandler } = (await import(join(dir, 'invoice-reminder.handler.ts'))) as { invoiceReminderHandler: HandlerDefinition };
    expect(invoiceReminderHandler).toMatchObject({ kind: 'invoice-reminder', pool: 'billing', payloadSchema: { required: ['id'] } });
    const report = await runTwice(invoiceReminderHandler, { id: 'r-1' }, {
      mode: 'crash-after-effect',
      effects: async (h) => (await h.ds.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM job_attempts WHERE outcome = 'succeeded'`))[0].n,
    });
    expect(report.state).toBe('d');
  });

  it('refuses a bad name, and will not overwrite a kind that exists', () => {
    expect(() => newKind('Bad_Name')).toThrow(/lower-case letters/);
    expect(() => newKind('invoice-reminder')).toThrow(/exists already/);
  });
});
