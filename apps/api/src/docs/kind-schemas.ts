import type { CatalogKind } from '@almanac/delivery';
import type { OpenAPIObject } from '@nestjs/swagger';

type Schema = Record<string, unknown>;

/**
 * The document with the registered kinds in it: per kind a `CreateJob.<kind>` schema (the job
 * body with `kind` fixed and `payload` the kind's registered JSON Schema), and POST /v1/jobs'
 * body as their `oneOf`, discriminated by `kind`, so a generated client can type each payload.
 * Kinds without a schema take any payload. The input document is not changed.
 */
export function withKindSchemas(document: OpenAPIObject, kinds: readonly CatalogKind[]): OpenAPIObject {
  if (kinds.length === 0) return document;
  const doc = structuredClone(document);
  const schemas = ((doc.components ??= {}).schemas ??= {}) as Record<string, Schema>;
  const mapping: Record<string, string> = {};
  for (const k of kinds) {
    const name = `CreateJob.${k.kind}`;
    mapping[k.kind] = `#/components/schemas/${name}`;
    schemas[name] = {
      allOf: [
        { $ref: '#/components/schemas/CreateJobDto' },
        {
          type: 'object',
          properties: {
            kind: { type: 'string', enum: [k.kind] },
            payload: k.payloadSchema ?? { description: 'Any JSON: this kind registered no payload schema' },
          },
        },
      ],
      description: `A ${k.kind} job (runs in pool ${k.pool}, ${k.timeoutMs} ms per attempt).`,
    };
  }
  const body = (doc.paths['/v1/jobs']?.post?.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.['application/json'];
  if (body) body.schema = { oneOf: Object.values(mapping).map(($ref) => ({ $ref })), discriminator: { propertyName: 'kind', mapping } };
  return doc;
}
