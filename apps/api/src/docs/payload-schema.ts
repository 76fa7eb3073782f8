type Schema = Record<string, unknown>;

/** OpenAPI 3.0 Schema Object keywords whose values are kept as they are. */
const PLAIN = new Set([
  'title', 'description', 'format', 'default', 'example', 'multipleOf', 'maximum', 'minimum', 'maxLength', 'minLength',
  'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum', 'nullable',
  'readOnly', 'writeOnly', 'deprecated',
]);

/** Keywords that only constrain values of one JSON type (a schema without `type` applies each to its own). */
const BY_TYPE: Record<string, readonly string[]> = {
  object: ['properties', 'required', 'additionalProperties', 'patternProperties', 'minProperties', 'maxProperties'],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  string: ['minLength', 'maxLength', 'pattern', 'format'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  boolean: [],
};
const JSON_TYPES = Object.keys(BY_TYPE);
const TYPE_SPECIFIC = new Set(Object.values(BY_TYPE).flat());
const COMBINATORS = ['allOf', 'anyOf', 'oneOf', 'not', 'enum', 'const', '$ref'];

/**
 * A kind's registered payload schema (JSON Schema, as TypeBox or a team writes it) as an
 * OpenAPI 3.0 Schema Object that says the same to a validator and to a client generator:
 *
 * - keywords 3.0 lacks are translated (`const`, `type` lists with "null", numeric
 *   `exclusiveMinimum`, `examples`, `patternProperties`, which becomes `additionalProperties`:
 *   3.0 cannot constrain key names) or dropped (`$id`, `$schema`, `if`, …), so the document
 *   stays valid OpenAPI;
 * - an object schema without `additionalProperties` allows other properties, as JSON Schema
 *   does (generators otherwise read it as closed and refuse what the API accepts);
 * - a schema without `type` that constrains, say, an object's properties still accepts every
 *   other JSON value (noop's `{"properties": {"sleepMs": …}}`): it becomes an `anyOf` of one
 *   branch per JSON type, each with its own keywords, null on the object branch.
 *
 * `$ref`s (the registered schema's own definitions do not exist in the document) become `{}`.
 */
export function openApiPayloadSchema(schema: unknown): Schema {
  if (schema === true || schema === undefined) return {};
  if (schema === false) return { not: {} };
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return {};
  const s = schema as Schema;
  if (typeof s.$ref === 'string') return pickDescription(s);
  const types = typeList(s.type);
  const nullable = s.nullable === true || types?.includes('null') === true;
  const nonNull = types?.filter((t) => t !== 'null');
  if (nonNull?.length === 1) return translate(s, nonNull[0], nullable);
  if (nonNull?.length === 0) return { ...pickCommon(s), nullable: true, enum: [null] };
  const constrainsByType = Object.keys(s).some((k) => TYPE_SPECIFIC.has(k));
  const combined = COMBINATORS.some((k) => k in s);
  if (nonNull === undefined && (combined || !constrainsByType)) return translate(s, undefined, nullable);
  // No single type: one branch per type the schema allows (every JSON type when it names none).
  const branches = nonNull ?? JSON_TYPES;
  return {
    ...pickCommon(s),
    anyOf: branches.map((t, i) => translate(pick(s, BY_TYPE[t === 'integer' ? 'number' : t] ?? []), t, nullable || (nonNull === undefined && i === 0))),
  };
}

function translate(s: Schema, type: string | undefined, nullable: boolean): Schema {
  const out: Schema = {};
  if (type !== undefined) out.type = type;
  if (nullable) out.nullable = true;
  for (const [k, v] of Object.entries(s)) {
    if (k === 'type' || k === 'nullable') continue;
    if (PLAIN.has(k)) out[k] = v;
    else if (k === 'const') out.enum = [v];
    else if (k === 'examples' && Array.isArray(v) && v.length > 0) out.example = v[0];
    else if ((k === 'exclusiveMinimum' || k === 'exclusiveMaximum') && typeof v === 'number') {
      out[k === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = v;
      out[k] = true;
    } else if (k === 'exclusiveMinimum' || k === 'exclusiveMaximum') out[k] = v;
    else if (k === 'properties' && isSchemaMap(v)) out.properties = mapValues(v, openApiPayloadSchema);
    else if (k === 'items') out.items = Array.isArray(v) ? { anyOf: v.map(openApiPayloadSchema) } : openApiPayloadSchema(v);
    else if (k === 'not') out.not = openApiPayloadSchema(v);
    else if ((k === 'allOf' || k === 'anyOf' || k === 'oneOf') && Array.isArray(v)) out[k] = v.map(openApiPayloadSchema);
    else if (k === 'additionalProperties') out.additionalProperties = typeof v === 'boolean' ? v : openApiPayloadSchema(v);
  }
  // Key patterns cannot be said in 3.0: their values' schemas stand for every other property.
  if (isSchemaMap(s.patternProperties) && (s.additionalProperties === undefined || typeof s.additionalProperties === 'boolean')) {
    const values = Object.values(s.patternProperties).map(openApiPayloadSchema);
    out.additionalProperties = values.length === 1 ? values[0] : { anyOf: values };
  }
  const objectLike = type === 'object' || (type === undefined && out.properties !== undefined);
  if (objectLike && out.additionalProperties === undefined) out.additionalProperties = true;
  if (type === 'array' && out.items === undefined) out.items = {};
  return out;
}

function typeList(type: unknown): string[] | undefined {
  if (typeof type === 'string') return [type];
  if (Array.isArray(type)) return type.filter((t): t is string => typeof t === 'string');
  return undefined;
}

function pick(s: Schema, keys: readonly string[]): Schema {
  return Object.fromEntries(Object.entries(s).filter(([k]) => keys.includes(k)));
}

/** What describes the whole value rather than one of its types. */
function pickCommon(s: Schema): Schema {
  return translate(pick(s, ['title', 'description', 'default', 'example', 'examples', 'readOnly', 'writeOnly', 'deprecated']), undefined, false);
}

function pickDescription(s: Schema): Schema {
  return typeof s.description === 'string' ? { description: s.description } : {};
}

function isSchemaMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function mapValues(v: Record<string, unknown>, f: (x: unknown) => Schema): Record<string, Schema> {
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, f(x)]));
}
