import type { CatalogKind } from '@almanac/kinds';
import type { OpenAPIObject } from '@nestjs/swagger';
import { openApiPayloadSchema } from './payload-schema';

type Schema = Record<string, unknown>;

/**
 * The document with the registered kinds in it, so a generated client can type each payload:
 *
 * - per kind a `CreateJob.<kind>` and a `CreateSchedule.<kind>` schema: the body with `kind`
 *   fixed and `payload` the kind's registered schema (openApiPayloadSchema), required when that
 *   schema refuses the null an absent payload stands for;
 * - POST /v1/jobs' and POST /v1/schedules' bodies, and each item of a batch, as their `oneOf`,
 *   discriminated by `kind`.
 *
 * Kinds without a schema take any payload. The input document is not changed.
 */
export function withKindSchemas(document: OpenAPIObject, kinds: readonly CatalogKind[]): OpenAPIObject {
  if (kinds.length === 0) return document;
  const doc = structuredClone(document);
  const schemas = ((doc.components ??= {}).schemas ??= {}) as Record<string, Schema>;
  const jobs = byKind(schemas, kinds, 'CreateJob', 'CreateJobDto', (k) => `A ${k.kind} job (runs in pool ${k.pool}, ${k.timeoutMs} ms per attempt).`);
  const schedules = byKind(schemas, kinds, 'CreateSchedule', 'CreateScheduleDto', (k) => `A schedule of ${k.kind} jobs.`);
  setJsonBody(doc, '/v1/jobs', jobs);
  setJsonBody(doc, '/v1/schedules', schedules);
  const batchJobs = (schemas.CreateJobBatchDto?.properties as Record<string, Schema> | undefined)?.jobs;
  if (batchJobs) batchJobs.items = jobs;
  return doc;
}

/** Adds `<prefix>.<kind>` for every kind; returns their union, discriminated by kind. */
function byKind(schemas: Record<string, Schema>, kinds: readonly CatalogKind[], prefix: string, base: string, describe: (k: CatalogKind) => string): Schema {
  const mapping: Record<string, string> = {};
  for (const k of kinds) {
    const name = `${prefix}.${k.kind}`;
    mapping[k.kind] = `#/components/schemas/${name}`;
    const payload = k.payloadSchema ? openApiPayloadSchema(k.payloadSchema) : { description: 'Any JSON: this kind registered no payload schema' };
    schemas[name] = {
      allOf: [
        { $ref: `#/components/schemas/${base}` },
        {
          type: 'object',
          properties: { kind: { type: 'string', enum: [k.kind] }, payload },
          ...(refusesNull(payload) ? { required: ['payload'] } : {}),
        },
      ],
      description: describe(k),
    };
  }
  return { oneOf: Object.values(mapping).map(($ref) => ({ $ref })), discriminator: { propertyName: 'kind', mapping } };
}

/** A schema with one `type` and no `nullable` refuses null, so the payload must be sent. */
function refusesNull(schema: Schema): boolean {
  return typeof schema.type === 'string' && schema.nullable !== true;
}

function setJsonBody(doc: OpenAPIObject, path: string, schema: Schema): void {
  const body = (doc.paths[path]?.post?.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.['application/json'];
  if (body) body.schema = schema;
}
