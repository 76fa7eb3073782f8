#!/usr/bin/env node
// @ts-check
'use strict';
// `npm run new:kind -- <name> [--pool <pool>] [--dir <handlers dir>]`: scaffolds a kind in the
// project's own style: its handler with a TypeBox payload schema and a ctx.tx() effect, its
// double-run spec (runTwice in every mode), and its line in the worker's handler list. Then:
// write the effect, run `npx jest <name>`, and the worker registers the kind at its next boot.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
/** The same rule as libs/domain KIND_PATTERN (kinds become file names here, so no dots). */
const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const POOL = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** @param {string} message */
function fail(message) {
  process.stderr.write(`new:kind: ${message}\n`);
  process.exit(1);
}

/** @param {string[]} argv */
function parseArgs(argv) {
  /** @type {{ name?: string, pool: string, dir: string }} */
  const args = { pool: 'default', dir: path.join(root, 'apps/worker/src/handlers') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--pool') args.pool = argv[++i] ?? '';
    else if (a === '--dir') args.dir = path.resolve(argv[++i] ?? '');
    else if (!args.name) args.name = a;
    else fail(`unexpected argument ${JSON.stringify(a)}`);
  }
  if (!args.name || !NAME.test(args.name)) fail('usage: npm run new:kind -- <name> [--pool <pool>]; <name>: lower-case letters, digits and "-", starting with a letter');
  if (!POOL.test(args.pool)) fail(`--pool ${JSON.stringify(args.pool)}: lower-case letters, digits, "_" and "-"`);
  return { name: /** @type {string} */ (args.name), pool: args.pool, dir: args.dir };
}

/** `invoice-reminder` → `invoiceReminder` @param {string} name */
const camel = (name) => name.replace(/-([a-z0-9])/g, (/** @type {string} */ _, /** @type {string} */ c) => c.toUpperCase());
/** @param {string} name */
const pascal = (name) => camel(name).replace(/^./, (c) => c.toUpperCase());

/** @param {string} name @param {string} pool */
function handlerSource(name, pool) {
  const P = pascal(name);
  return `import { completed, defineHandler } from '@almanac/kinds';
import { type Static, Type } from '@sinclair/typebox';

/**
 * \`${name}\`: TODO say what one job does, what its effect is, and what makes it happen once.
 * The effect below is written through ctx.tx(): it commits with the job's completion, and only
 * while this run is still the job's current attempt. For a call outside Postgres, pass an
 * idempotency key, or guard it with ctx.effects.once (docs/handlers.md).
 *
 * Payload: \`{ "id": "…" }\`.
 */
export const ${P}PayloadSchema = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 200 }),
  },
  { additionalProperties: false },
);
export type ${P}Payload = Static<typeof ${P}PayloadSchema>;

export const ${camel(name)}Handler = defineHandler<${P}Payload>({
  kind: '${name}',
  timeoutMs: 10_000,
  pool: '${pool}',
  payloadSchema: ${P}PayloadSchema,
  async handle(ctx, payload) {
    const tx = await ctx.tx();
    // TODO the effect. Until then, the job's own attempt row is its only trace.
    await tx.query('SELECT 1');
    ctx.logger.info({ id: payload.id }, '${name} done');
    return completed({ id: payload.id });
  },
});
`;
}

/** @param {string} name */
function specSource(name) {
  return `import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { ${camel(name)}Handler } from './${name}.handler';

describe('${name}', () => {
  it.each(DOUBLE_RUN_MODES)('has exactly one effect when the job runs twice (%s)', async (mode) => {
    await runTwice(${camel(name)}Handler, { id: 'example-1' }, {
      mode,
      // Count the effect from outside: rows written (h.ds.query), messages received, calls made.
      // Until it is written, this spec fails: a green double-run spec must have counted something.
      effects: async () => {
        throw new Error('TODO: count the ${name} effect');
      },
    });
  });
});
`;
}

/** Adds the handler to allHandlers() in the handler list (index.ts), once. @param {string} dir @param {string} name */
function register(dir, name) {
  const index = path.join(dir, 'index.ts');
  if (!fs.existsSync(index)) return false;
  let src = fs.readFileSync(index, 'utf8');
  const exported = `${camel(name)}Handler`;
  if (src.includes(`'./${name}.handler'`)) return true;
  src = src.replace(/(\nexport \* from [^\n]+\n)(?![\s\S]*\nexport \* from)/, `$1export * from './${name}.handler';\n`);
  src = src.replace(/((?:^import [^\n]+\n)+)/m, `$1import { ${exported} } from './${name}.handler';\n`);
  const list = /(const HANDLERS: HandlerDefinition\[\] = \[)([^\]]*)(\];)/;
  if (!list.test(src)) return false;
  src = src.replace(list, (_, open, items, close) => `${open}${items}, ${exported}${close}`);
  fs.writeFileSync(index, src);
  return true;
}

function main() {
  const { name, pool, dir } = parseArgs(process.argv.slice(2));
  const handlerFile = path.join(dir, `${name}.handler.ts`);
  const specFile = path.join(dir, `${name}.handler.spec.ts`);
  for (const f of [handlerFile, specFile]) if (fs.existsSync(f)) fail(`${path.relative(root, f)} exists already`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(handlerFile, handlerSource(name, pool));
  fs.writeFileSync(specFile, specSource(name));
  const registered = register(dir, name);
  process.stdout.write(
    [
      `created ${path.relative(root, handlerFile)}`,
      `created ${path.relative(root, specFile)}`,
      registered ? `added ${camel(name)}Handler to ${path.relative(root, path.join(dir, 'index.ts'))}` : `add ${camel(name)}Handler to your worker's handler list`,
      `next: write the effect and its count (the TODOs), then \`npx jest ${name}\``,
      '',
    ].join('\n'),
  );
}

main();
