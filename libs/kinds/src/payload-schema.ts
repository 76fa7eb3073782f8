import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

/**
 * A kind's payload schema: JSON Schema (draft-07 keywords), as TypeBox builds it
 * (`Type.Object({ invoiceId: Type.String() })`). Plain JSON, so the kind registry stores it in
 * Postgres, the API validates ingest against it and the OpenAPI document shows it unchanged.
 */
export type PayloadSchema = Readonly<Record<string, unknown>>;

/** One thing wrong with a payload, named by its path (`payload.items[2].sku`). */
export interface PayloadProblem {
  field: string;
  rule: string;
  message: string;
}

export type PayloadCheck = (payload: unknown) => PayloadProblem[];

/**
 * Compiles payload schemas with Ajv (the JSON Schema validator Fastify itself uses), caching by
 * the schema's text (every API replica and worker compiles each registered schema once) and
 * by the schema object (a per-job check serialises nothing).
 * `strict: false` because schemas come from handler code we did not write (unknown keywords
 * such as TypeBox's are ignored, not fatal); formats (email, uri, date-time …) are checked.
 * A schema is removed from the long-lived Ajv once compiled, so the next version of a kind's
 * schema, or another kind's, may use the same root `$id` (Ajv refused those: "schema with key or
 * id … already exists"). Compiled with it registered, it still refers to its own `$id` (TypeBox's
 * `Type.Recursive` does; with `addUsedSchema: false` those no longer compiled).
 */
export class PayloadSchemas {
  private readonly ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
  private readonly compiled = new Map<string, PayloadCheck>();
  /** The same schema object asks again for every job: found without serialising it each time. */
  private readonly bySchema = new WeakMap<PayloadSchema, PayloadCheck>();

  check(schema: PayloadSchema): PayloadCheck {
    let check = this.bySchema.get(schema);
    if (check) return check;
    const text = JSON.stringify(schema);
    check = this.compiled.get(text);
    if (!check) {
      check = toCheck(this.compile(JSON.parse(text) as object));
      this.compiled.set(text, check);
    }
    this.bySchema.set(schema, check);
    return check;
  }

  /** Throws (naming what is wrong) when `schema` is not a schema Ajv can compile: a handler author's mistake, found at boot. */
  assertCompiles(kind: string, schema: PayloadSchema): void {
    try {
      this.check(schema);
    } catch (err) {
      throw new Error(`handler ${kind}: ${(err as Error).message}`, { cause: err });
    }
  }

  private compile(schema: object): ValidateFunction {
    // Not one of Ajv's own (a root `$id` copied from `$schema`): removed, its meta-schema no longer checked later schemas.
    const id = (schema as { $id?: unknown }).$id;
    const taken = typeof id === 'string' && this.ajv.getSchema(id) !== undefined;
    try {
      return this.ajv.compile(schema);
    } catch (err) {
      throw new PayloadSchemaError(`payload schema does not compile: ${(err as Error).message}`, { cause: err });
    } finally {
      if (!taken) this.ajv.removeSchema(schema);
    }
  }
}

/** A payload schema Ajv cannot compile (`check` throws it): no payload can be checked against it. */
export class PayloadSchemaError extends Error {
  override readonly name = 'PayloadSchemaError';
}

/** At most this many problems are reported for one payload; the first ones name the field. */
const MAX_PROBLEMS = 10;

function toCheck(validate: ValidateFunction): PayloadCheck {
  return (payload) => (validate(payload) ? [] : (validate.errors ?? []).slice(0, MAX_PROBLEMS).map(toProblem));
}

function toProblem(e: ErrorObject): PayloadProblem {
  const at = fieldOf(e.instancePath);
  if (e.keyword === 'required') {
    const field = `${at}.${String((e.params as { missingProperty: string }).missingProperty)}`;
    return { field, rule: 'required', message: `${field} is required` };
  }
  if (e.keyword === 'additionalProperties') {
    const field = `${at}.${String((e.params as { additionalProperty: string }).additionalProperty)}`;
    return { field, rule: 'unknown_field', message: `${field} is not allowed by the kind's payload schema` };
  }
  return { field: at, rule: `schema_${e.keyword}`, message: `${at} ${e.message ?? 'is invalid'}` };
}

/** JSON Pointer (`/items/2/sku`) → the API's field spelling (`payload.items[2].sku`). */
function fieldOf(pointer: string): string {
  let field = 'payload';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    field += /^\d+$/.test(part) ? `[${part}]` : `.${part}`;
  }
  return field;
}
