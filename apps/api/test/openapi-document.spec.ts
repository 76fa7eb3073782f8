import SwaggerParser from '@apidevtools/swagger-parser';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { type ApiHarness, startApi } from './api-harness';

/** @almanac/client's types, made by openapi-typescript from the document this API serves. */
const GENERATED = join(__dirname, '../../../libs/client/src/generated/openapi.ts');
const REGENERATE = 'npm run generate:client';
/** Set by `npm run generate:client`: write the file instead of comparing with it. */
const WRITE = process.env.ALMANAC_WRITE_CLIENT_TYPES === '1';

type OpenApiDocument = Exclude<Parameters<typeof SwaggerParser.validate>[1], string>;

/** openapi-typescript's CLI on `document`, as a generator outside this repo would run it. */
function openapiTypescript(document: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'almanac-openapi-'));
  try {
    const input = join(dir, 'openapi.json');
    const output = join(dir, 'openapi.ts');
    writeFileSync(input, JSON.stringify(document));
    // Its package's exports map bin/cli.js to a .mjs that does not exist: found from package.json instead.
    const cli = join(dirname(require.resolve('openapi-typescript/package.json')), 'bin/cli.js');
    execFileSync(process.execPath, [cli, input, '--output', output], { stdio: 'pipe' });
    return readFileSync(output, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first line where two texts differ, with its neighbours, for the failure message. */
function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  const i = a.findIndex((line, n) => line !== b[n]);
  const at = i === -1 ? a.length : i;
  return `line ${at + 1}:\n  committed: ${JSON.stringify(a[at])}\n  generated: ${JSON.stringify(b[at])}`;
}

describe('the OpenAPI document (with every built-in kind registered)', () => {
  let h: ApiHarness;
  let document: OpenApiDocument;

  beforeAll(async () => {
    // Every built-in kind: a worker with SMTP configured also registers `email`.
    h = await startApi({ ALMANAC_SMTP_URL: 'smtp://127.0.0.1:2525' });
    document = (await h.http().get('/docs-json').expect(200)).body;
  });
  afterAll(() => h.close());

  it('is valid OpenAPI 3.0 to @apidevtools/swagger-parser', async () => {
    // validate() dereferences in place: it gets a copy.
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toMatchObject({ openapi: expect.stringMatching(/^3\.0\./) });
  });

  it('types query parameters as they are meant: counts are integers, instants date-times (issue 34, item 4)', () => {
    type Param = { name: string; in: string; schema?: { type?: string; format?: string } };
    const query = (path: string) => ((document.paths?.[path]?.get?.parameters ?? []) as Param[]).filter((p) => p.in === 'query');
    const schemaOf = (path: string, name: string) => query(path).find((p) => p.name === name)?.schema;
    for (const [path, name] of [['/v1/jobs', 'limit'], ['/v1/jobs/{id}/attempts', 'limit'], ['/v1/schedules', 'limit'], ['/v1/schedules/{id}/next', 'count'], ['/v1/schedules/{id}/runs', 'limit']]) {
      expect([path, name, schemaOf(path, name)?.type]).toEqual([path, name, 'integer']);
    }
    for (const [path, name] of [['/v1/jobs', 'from'], ['/v1/jobs', 'to'], ['/v1/schedules/{id}/runs', 'from']]) {
      expect([path, name, schemaOf(path, name)]).toEqual([path, name, expect.objectContaining({ type: 'string', format: 'date-time' })]);
    }
  });

  it('types GET /v1/jobs 200 as either answer: a JobPage, or with key a JobDetail', () => {
    const ok = document.paths?.['/v1/jobs']?.get?.responses?.['200'] as { content?: Record<string, { schema?: unknown }> } | undefined;
    expect(ok?.content?.['application/json']?.schema).toEqual({
      oneOf: [{ $ref: '#/components/schemas/JobPageDto' }, { $ref: '#/components/schemas/JobDetailDto' }],
    });
  });

  it("declares the 400 of the job reads and the 503 of a wait past the replica's cap, as ErrorDto", () => {
    const responses = (path: string) => (document.paths?.[path]?.get?.responses ?? {}) as Record<string, { content?: Record<string, { schema?: unknown }> }>;
    const error = { $ref: '#/components/schemas/ErrorDto' };
    for (const [path, status] of [['/v1/jobs', '400'], ['/v1/jobs/{id}', '400'], ['/v1/jobs/{id}', '503'], ['/v1/jobs/{id}/attempts', '400']]) {
      expect([path, status, responses(path)[status]?.content?.['application/json']?.schema]).toEqual([path, status, error]);
    }
  });

  it('declares the statuses the server answers: the stored-bytes 413 of every write, the suspended 403 of every tenant route, a schedule\'s 404 and 409 (review)', () => {
    type Op = { responses?: Record<string, { description?: string }> };
    const op = (path: string, method: 'get' | 'post' | 'patch') => (document.paths?.[path] as Record<string, Op> | undefined)?.[method]?.responses ?? {};
    for (const [path, method] of [['/v1/jobs', 'post'], ['/v1/jobs/batch', 'post'], ['/v1/schedules', 'post'], ['/v1/schedules/{id}', 'patch']] as const) {
      expect([path, method, op(path, method)['413']?.description]).toEqual([path, method, expect.stringContaining('stored_bytes_quota')]);
    }
    for (const [path, method] of [['/v1/jobs', 'get'], ['/v1/schedules', 'get'], ['/v1/kinds', 'get']] as const) {
      expect([path, op(path, method)['403']?.description]).toEqual([path, expect.stringContaining('suspended')]);
    }
    expect(Object.keys(op('/v1/schedules/{id}/pause', 'post'))).toContain('404');
    expect(op('/v1/schedules/{id}', 'patch')['409']?.description).toContain('concurrent_update');
    expect(((document.paths?.['/v1/jobs'] as Record<string, { description?: string }>).get.description)).toContain('only `nextCursor: null` ends the list');
  });

  it("lets an independent generator's client compile real calls: openapi-typescript's types with openapi-fetch (issue 34, item 4)", () => {
    // Inside the repo, so `openapi-fetch` resolves from its node_modules.
    const dir = mkdtempSync(join(__dirname, '.tmp-openapi-fetch-'));
    try {
      writeFileSync(join(dir, 'openapi.ts'), openapiTypescript(document));
      writeFileSync(join(dir, 'calls.ts'), `
        import createClient from 'openapi-fetch';
        import type { paths } from './openapi';
        const almanac = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000', headers: { Authorization: 'Bearer alm_x' } });
        export async function calls(): Promise<unknown[]> {
          const page = await almanac.GET('/v1/jobs', { params: { query: { limit: 50, state: 'dead', from: '2026-11-01T00:00:00Z' } } });
          // A page, or with key the one JobDetail (oneOf): narrowed as a caller of either must.
          const data = page.data;
          const key: string | undefined = data && 'items' in data ? data.items[0]?.key : undefined;
          const next: string | null | undefined = data && 'nextCursor' in data ? data.nextCursor : undefined;
          const found = await almanac.GET('/v1/jobs', { params: { query: { key: 'invoice:2026-11' } } });
          const attempts: number | undefined = found.data && !('items' in found.data) ? found.data.attempts : undefined;
          const runs = await almanac.GET('/v1/schedules/{id}/runs', { params: { path: { id: '1' }, query: { date: '2026-12-01', limit: 10 } } });
          const late: number | null | undefined = runs.data?.items[0]?.lateMs;
          const keys = await almanac.GET('/v1/admin/tenants/{id}/keys', { params: { path: { id: '1' }, query: { limit: 2 } } });
          return [key, next, attempts, late, keys.data?.nextCursor];
        }
      `);
      const program = ts.createProgram([join(dir, 'calls.ts')], {
        strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, skipLibCheck: true, types: [],
      });
      const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(errors).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(`is what libs/client/src/generated/openapi.ts was generated from (${REGENERATE} regenerates it)`, () => {
    const generated = openapiTypescript(document);
    if (WRITE) {
      writeFileSync(GENERATED, generated);
      return;
    }
    const committed = existsSync(GENERATED) ? readFileSync(GENERATED, 'utf8') : '';
    if (generated !== committed) {
      throw new Error(
        `libs/client/src/generated/openapi.ts is out of date with the API's OpenAPI document ` +
          `(a DTO, a route or a built-in kind's payload schema changed). Regenerate it and commit the result:\n\n` +
          `  ${REGENERATE}\n\nFirst difference at ${firstDifference(committed, generated)}`,
      );
    }
  });
});
