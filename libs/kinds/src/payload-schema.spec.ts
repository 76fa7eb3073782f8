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

  it("checks the next version of a schema with the same root $id, and another kind's with that $id, each by its own rules", () => {
    const v1 = { $id: 'P', type: 'object', properties: { to: { type: 'string' } }, additionalProperties: false };
    const v2 = { ...v1, properties: { ...v1.properties, note: { type: 'string' } } };
    expect(schemas.check(v1)({ to: 'x', note: 'hi' })).toMatchObject([{ field: 'payload.note', rule: 'unknown_field' }]);
    expect(schemas.check(v2)({ to: 'x', note: 'hi' })).toEqual([]); // Ajv threw "schema with key or id "P" already exists"
    const other = { $id: 'P', type: 'object', required: ['id'] };
    expect(schemas.check(other)({})).toMatchObject([{ field: 'payload.id', rule: 'required' }]);
    expect(schemas.check(v1)({ to: 1 })).toMatchObject([{ field: 'payload.to', rule: 'schema_type' }]);
  });

  it("resolves a schema's own $refs: to its definitions, to its root, and to a subschema's $id", () => {
    const tree = {
      $id: 'https://example.com/tree', type: 'object', required: ['item'],
      properties: { item: { $ref: '#/definitions/item' }, children: { type: 'array', items: { $ref: '#' } }, tag: { $ref: 'tag' } },
      definitions: { item: { type: 'string', minLength: 1 }, tag: { $id: 'tag', type: 'string', maxLength: 3 } },
    };
    const check = schemas.check(tree);
    expect(check({ item: 'a', children: [{ item: 'b' }], tag: 'abc' })).toEqual([]);
    expect(check({ item: 'a', children: [{ item: '' }], tag: 'abcd' }).map((p) => p.field).sort()).toEqual(['payload.children[0].item', 'payload.tag']);
  });

  it("compiles a recursive TypeBox schema, which refers to its own root $id, again and in its next version", () => {
    const node = (extra: boolean) => Type.Recursive((This) => Type.Object({ id: Type.String(), ...(extra ? { note: Type.String() } : {}), kids: Type.Array(This) }), { $id: 'Node' });
    const v1 = schemas.check(JSON.parse(JSON.stringify(node(false))) as Record<string, unknown>);
    expect(v1({ id: 'a', kids: [{ id: 'b', kids: [] }] })).toEqual([]);
    expect(v1({ id: 'a', kids: [{ id: 2, kids: [] }] }).map((p) => p.field)).toEqual(['payload.kids[0].id']);
    const v2 = schemas.check(JSON.parse(JSON.stringify(node(true))) as Record<string, unknown>); // before: "can't resolve reference Node"
    expect(v2({ id: 'a', note: 'n', kids: [] })).toEqual([]);
  });

  it("refuses a schema whose root $id is Ajv's draft-07 meta-schema, and still compiles the next", () => {
    const own = new PayloadSchemas();
    expect(() => own.check({ $id: 'http://json-schema.org/draft-07/schema', type: 'object' })).toThrow(/does not compile/);
    expect(own.check({ type: 'object', required: ['a'] })({})).toHaveLength(1);
    // Ajv's meta-schema is still there to refuse a schema it alone finds wrong (before: removed, this compiled).
    expect(() => own.check({ type: 'array', maxItems: -1 })).toThrow(/does not compile/);
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
