import { Type } from '@sinclair/typebox';
import { completed, defineHandler, handlerPayload, InvalidPayloadError } from './handler';
import { PayloadSchemas } from './payload-schema';

describe('PayloadSchemas', () => {
  const schemas = new PayloadSchemas();
  const Order = Type.Object(
    {
      email: Type.String({ format: 'email' }),
      items: Type.Array(Type.Object({ sku: Type.String({ minLength: 1 }), qty: Type.Integer({ minimum: 1 }) }), { minItems: 1 }),
    },
    { additionalProperties: false },
  );

  it('names each problem by its field path, as the API spells fields', () => {
    const check = schemas.check(Order);
    expect(check({ email: 'a@example.com', items: [{ sku: 'x', qty: 1 }] })).toEqual([]);
    const problems = check({ email: 'nope', items: [{ sku: 'x', qty: 1 }, { qty: 0 }], extra: true });
    expect(problems.map((p) => [p.field, p.rule]).sort()).toEqual([
      ['payload.email', 'schema_format'],
      ['payload.extra', 'unknown_field'],
      ['payload.items[1].qty', 'schema_minimum'],
      ['payload.items[1].sku', 'required'],
    ]);
    expect(problems.find((p) => p.field === 'payload.items[1].sku')?.message).toBe('payload.items[1].sku is required');
    expect(check(null)).toEqual([{ field: 'payload', rule: 'schema_type', message: 'payload must be object' }]);
  });

  it('compiles each schema once, by its text: a copy read back from the registry shares the compiled check', () => {
    expect(schemas.check(JSON.parse(JSON.stringify(Order)) as Record<string, unknown>)).toBe(schemas.check(Order));
  });

  it('does not serialise a schema it has checked with before (the per-job path)', () => {
    const schema = { type: 'object', required: ['id'] };
    const first = schemas.check(schema);
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      expect(schemas.check(schema)).toBe(first);
      expect(stringify).not.toHaveBeenCalled();
    } finally {
      stringify.mockRestore();
    }
  });

  it('refuses, at definition, a handler whose schema does not compile', () => {
    expect(() => defineHandler({ kind: 'broken', timeoutMs: 1000, payloadSchema: { type: 'no-such-type' }, handle: async () => completed() })).toThrow(
      /handler broken: payload schema does not compile/,
    );
  });

  it('checks a stored payload before the handler sees it: a mismatch is an InvalidPayloadError (the job is discarded)', () => {
    const handler = defineHandler({ kind: 'order', timeoutMs: 1000, payloadSchema: Order, handle: async () => completed() });
    expect(handlerPayload(handler, { email: 'a@example.com', items: [{ sku: 'x', qty: 2 }] })).toEqual({ email: 'a@example.com', items: [{ sku: 'x', qty: 2 }] });
    expect(() => handlerPayload(handler, { email: 'a@example.com', items: [] })).toThrow(InvalidPayloadError);
    expect(() => handlerPayload(handler, { email: 'a@example.com', items: [] })).toThrow('order payload: payload.items must NOT have fewer than 1 items');
  });
});
