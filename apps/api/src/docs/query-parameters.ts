import type { OpenAPIObject } from '@nestjs/swagger';

type Parameter = { in?: string; schema?: Record<string, unknown> };

const DECLARES_VALUES = ['type', 'enum', '$ref', 'allOf', 'anyOf', 'oneOf'];

/**
 * Query parameters declared without a type (`@ApiQuery({ name: 'limit' })`) as strings: that is
 * what a query value is on the wire and what the controllers parse (`limit=100` is the text
 * "100"). Without it @nestjs/swagger writes an empty schema, and generators type every such
 * parameter `unknown`. Changes `document` in place and returns it.
 */
export function withTextQueryParameters(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const parameters = (operation as { parameters?: Parameter[] } | undefined)?.parameters;
      if (!Array.isArray(parameters)) continue;
      for (const p of parameters) {
        if (p.in !== 'query') continue;
        const schema = (p.schema ??= {});
        if (!DECLARES_VALUES.some((k) => k in schema)) schema.type = 'string';
      }
    }
  }
  return document;
}
