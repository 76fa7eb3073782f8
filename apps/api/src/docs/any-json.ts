import type { ApiPropertyOptions } from '@nestjs/swagger';

/**
 * Options for a property that holds any JSON value: an object, array, string, number, boolean
 * or null, as payloads and results do. In JSON Schema that is the empty schema. @nestjs/swagger
 * writes a `type` for every property (`object`, for `unknown`) unless a combinator is given, and
 * generators read `type: object` without properties as an empty object (openapi-typescript:
 * `Record<string, never>`), so a generated client could send no payload at all. `anyOf: [{}]` is
 * the empty schema in a form Nest keeps; generators read it as `unknown`, which a kind's own
 * payload schema (kind-schemas.ts) then narrows.
 */
export function anyJson(description: string, example?: unknown): ApiPropertyOptions {
  return { description, anyOf: [{}], ...(example === undefined ? {} : { example }) };
}
