import { openApiPayloadSchema } from './payload-schema';

describe('openApiPayloadSchema: a registered JSON Schema as an OpenAPI 3.0 Schema Object', () => {
  it('keeps a closed object closed and opens one that did not say (JSON Schema allows other properties)', () => {
    const closed = { type: 'object', required: ['a'], properties: { a: { type: 'string', minLength: 1 } }, additionalProperties: false };
    expect(openApiPayloadSchema(closed)).toEqual({ ...closed, properties: { a: { type: 'string', minLength: 1 } } });
    expect(openApiPayloadSchema({ type: 'object', properties: { n: { type: 'object' } } })).toEqual({
      type: 'object',
      properties: { n: { type: 'object', additionalProperties: true } },
      additionalProperties: true,
    });
  });

  it('says in 3.0 what 3.0 lacks: key patterns, const, type lists with null, numeric exclusive bounds, examples', () => {
    // TypeBox's Type.Record(Type.String(), Type.String()), as the http kind's headers.
    expect(openApiPayloadSchema({ type: 'object', patternProperties: { '^(.*)$': { type: 'string', maxLength: 10 } } })).toEqual({
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 10 },
    });
    expect(openApiPayloadSchema({ const: 'v1' })).toEqual({ enum: ['v1'] });
    expect(openApiPayloadSchema({ type: ['string', 'null'], maxLength: 5 })).toEqual({ type: 'string', nullable: true, maxLength: 5 });
    expect(openApiPayloadSchema({ type: 'number', exclusiveMinimum: 0 })).toEqual({ type: 'number', minimum: 0, exclusiveMinimum: true });
    expect(openApiPayloadSchema({ type: 'string', examples: ['a', 'b'], $id: 'x', $schema: 'y' })).toEqual({ type: 'string', example: 'a' });
    expect(openApiPayloadSchema({ type: 'array' })).toEqual({ type: 'array', items: {} });
  });

  it('gives a schema without a type one branch per JSON type, each with its own keywords (noop)', () => {
    expect(openApiPayloadSchema({ description: 'anything', properties: { sleepMs: { type: 'integer', maximum: 4000 } }, maxLength: 3 })).toEqual({
      description: 'anything',
      anyOf: [
        { type: 'object', nullable: true, properties: { sleepMs: { type: 'integer', maximum: 4000 } }, additionalProperties: true },
        { type: 'array', items: {} },
        { type: 'string', maxLength: 3 },
        { type: 'number' },
        { type: 'boolean' },
      ],
    });
    expect(openApiPayloadSchema({ type: ['string', 'integer'], minimum: 1 })).toEqual({ anyOf: [{ type: 'string' }, { type: 'integer', minimum: 1 }] });
  });

  it('reads any value for what the document cannot hold ($ref, true) and nothing for false', () => {
    expect(openApiPayloadSchema({ description: 'an order', $ref: '#/definitions/Order' })).toEqual({ description: 'an order' });
    expect(openApiPayloadSchema({ description: 'any JSON' })).toEqual({ description: 'any JSON' });
    expect(openApiPayloadSchema(true)).toEqual({});
    expect(openApiPayloadSchema(false)).toEqual({ not: {} });
  });
});
