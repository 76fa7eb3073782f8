import { KindCatalog } from '@almanac/kinds';
import { ApiError } from '../http/api-error';
import { Issues } from '../http/validation';
import { checkKindPayload } from './kind-check';

describe('checkKindPayload', () => {
  /** The API's copy of a registry holding these schemas for kinds `a` and `b`. */
  async function catalogOf(a: Record<string, unknown>, b: Record<string, unknown>): Promise<KindCatalog> {
    const list = async () => [a, b].map((payloadSchema, i) => ({ kind: 'ab'[i], pool: 'default', timeoutMs: 1000, payloadSchema }));
    const catalog = new KindCatalog({ list }, { maxAgeMs: 0, missRefreshMs: 0 });
    await catalog.refresh(0);
    return catalog;
  }

  it('checks two kinds whose schemas share a root $id, and a kind whose schema changed under the same $id', async () => {
    const v1 = { $id: 'P', type: 'object', properties: { to: { type: 'string' } }, additionalProperties: false };
    const catalog = await catalogOf(v1, { $id: 'P', type: 'object', required: ['id'] });
    const issues = new Issues();
    checkKindPayload('a', { to: 'x' }, catalog, issues);
    checkKindPayload('b', {}, catalog, issues); // Ajv threw "schema with key or id "P" already exists": a 500
    expect(issues.list).toMatchObject([{ field: 'payload.id', rule: 'required' }]);
  });

  it('answers 503 naming the kind, not 500, when its registered schema does not compile', async () => {
    const catalog = await catalogOf({ type: 'no-such-type' }, { type: 'object' });
    let thrown: unknown;
    try {
      checkKindPayload('a', {}, catalog, new Issues());
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect(thrown).toMatchObject({ status: 503, message: expect.stringMatching(/^kind "a": its registered payload schema does not compile/), headers: { 'Retry-After': '30' } });
  });
});
