import { KIND_PATTERN, POOL_NAME_PATTERN, snooze, type HandlerOutcome } from '@almanac/domain';
import type { Context } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { createdAtFromJobId, type MigrationClass } from '@almanac/persistence';
import type { EntityManager } from 'typeorm';
import { type PayloadProblem, type PayloadSchema, PayloadSchemas } from './payload-schema';

/**
 * Outcomes are the domain's values: `completed(result?)`, `retry({delayMs?, reason?})`,
 * `snooze({delayMs, reason?})`, `discard(reason)`. Re-exported so a handler file imports everything from one place.
 */
export { completed, discard, retry, snooze } from '@almanac/domain';
export type { HandlerOutcome, JsonValue } from '@almanac/domain';

export interface HandlerContext {
  readonly tenantId: number;
  readonly jobId: string;
  readonly key: string;
  readonly kind: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Aborted at the kind's timeout and when the worker shuts down: pass it to fetch & co. */
  readonly signal: AbortSignal;
  /** pino child with tenantId, jobId, kind, attempt. Never log the payload. */
  readonly logger: Logger;
  /**
   * The transaction the job's completion commits in. Everything written through it commits if
   * and only if this delivery is still the current one (state running, same attempt) when the
   * handler returns; otherwise it rolls back, so a duplicate or stale delivery has no effect.
   * Opened on first call: handlers that never call it are completed in group commits.
   * A thrown exception rolls it back too. Postgres ends a transaction left idle longer than
   * ALMANAC_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS (10 min): write late, after slow external calls.
   */
  tx(): Promise<EntityManager>;
  /** Effect records, for outside calls that take no idempotency key (see EffectRecords). */
  readonly effects: EffectRecords;
  /**
   * Reports how far the run got (0-100) and a short note; `GET /v1/jobs/:id` and the console show
   * the latest, with this attempt. Cheap to call often: the worker writes the latest report with
   * its next heartbeat (about a second). Throws RangeError for a percent outside 0-100.
   */
  progress(percent: number, note?: string): void;
  /**
   * The OpenTelemetry context of this run's handler span: parent your own spans under it
   * (`tracer.startSpan(name, {}, ctx.traceContext)`). The root context when tracing is off.
   * Almanac registers no global context manager unless ALMANAC_TRACING_CONTEXT asks for one.
   */
  readonly traceContext: Context;
}

/**
 * What `ctx.effects.once` found: this run made the call, an earlier run did, or another run is
 * making it now (`retryAfterMs`: when its claim goes stale, if it has not finished by then).
 */
export type EffectOnce<T> = { busy: false; ran: boolean; result: T } | { busy: true; retryAfterMs: number };

/**
 * An effect key checked before a non-idempotent call (an SMTP send): the record is claimed and
 * committed before the call, and marked done with the call's result after it, each on its own
 * transaction, so it outlives this attempt. A later run of the job finds it done and does not
 * call again. Keys are per tenant; derive them from the job's id (`ctx.jobId`: the same on every
 * run, never another job's, unlike a key retention may free) and what the effect is for.
 */
export interface EffectRecords {
  /**
   * Calls `call` unless the effect `key` was done before. `busy`: another run holds the claim
   * now; return `snooze({ delayMs: retryAfterMs })` (it spends no attempt). A call that throws gives the claim up (the
   * retry calls again). A claim older than `staleAfterMs` (default: the kind's timeout plus 30 s,
   * by which time its run has been aborted) is presumed dead and taken over. A worker that dies
   * between the call and its record leaves a claim that is taken over after that: the call is
   * then made again, so give it a key the receiver can deduplicate by (a Message-ID).
   */
  once<T>(key: string, call: () => Promise<T>, opts?: { staleAfterMs?: number }): Promise<EffectOnce<T>>;
}

export interface HandlerDefinition<P = unknown> {
  kind: string;
  /** Per-attempt deadline: `ctx.signal` aborts then, and the attempt counts as failed. */
  timeoutMs: number;
  /** Worker pool (its ready list and its workers); ALMANAC_POOLS overrides it; default `default`. */
  pool?: string;
  /**
   * The payload's JSON Schema, built with TypeBox (`Type.Object({...})`). Registered with the
   * kind, so the API refuses a payload that does not match at ingest (400 naming the field) and
   * the OpenAPI document shows it; checked again before the handler runs (rows accepted before
   * the schema changed), where a mismatch discards the job, unless another live definition of
   * the kind is in use (KindAssertion.keepRefused).
   */
  payloadSchema?: PayloadSchema;
  /**
   * Checks beyond the schema, and types the payload (e.g. a URL against an allow-list). Throw
   * `InvalidPayloadError` for a payload that can never succeed: the job is discarded.
   */
  parse?: (payload: unknown) => P;
  /**
   * The tables the handler writes, as TypeORM migrations (a class with a timestamped `name`).
   * A worker applies those of the kinds it registers at boot, recorded in `kind_migrations`;
   * kinds may share one (it runs once). Like the scheduler's own, they must stay backward
   * compatible with the release before: its workers run beside the new ones during an update.
   */
  migrations?: readonly MigrationClass[];
  handle(ctx: HandlerContext, payload: P): Promise<HandlerOutcome>;
}

/** The payload can never be handled; retrying would not help, so the job goes to `dead`. */
export class InvalidPayloadError extends Error {
  override readonly name = 'InvalidPayloadError';
}

/** The reason a refused payload's job is snoozed with while another definition of its kind is in use. */
export const ANOTHER_DEFINITION_IN_USE = 'another live definition of the kind is in use; left for its workers';

/**
 * The payload fails this worker's schema, but the registry's definition of its kind may be another
 * live one (a newer build mid-update, which the API checked the payload against): a worker of
 * that build should run it. The job is snoozed, which spends no attempt, instead of discarded.
 */
export class PayloadForAnotherDefinitionError extends Error {
  override readonly name = 'PayloadForAnotherDefinitionError';
  readonly outcome: HandlerOutcome;
  constructor(message: string, why: string = ANOTHER_DEFINITION_IN_USE) {
    super(message);
    this.outcome = snooze({ delayMs: ANOTHER_DEFINITION_WAIT_MS, reason: `${message} (${why})` });
  }
}

/** How long such a payload waits before a worker takes it again (one of the newer build, or this one once its own is in use again). */
export const ANOTHER_DEFINITION_WAIT_MS = 5_000;

export class HandlerDefinitionError extends Error {
  override readonly name = 'HandlerDefinitionError';
}

/** Declares a handler; checks what can be checked before any job runs. */
export function defineHandler<P>(def: HandlerDefinition<P>): HandlerDefinition<P> {
  if (!KIND_PATTERN.test(def.kind)) throw new HandlerDefinitionError(`handler kind ${JSON.stringify(def.kind)} must match ${String(KIND_PATTERN)}`);
  if (!Number.isInteger(def.timeoutMs) || def.timeoutMs < 1 || def.timeoutMs > 24 * 3600_000) {
    throw new HandlerDefinitionError(`handler ${def.kind}: timeoutMs must be an integer from 1 to 86400000`);
  }
  if (def.pool !== undefined && !POOL_NAME_PATTERN.test(def.pool)) {
    throw new HandlerDefinitionError(`handler ${def.kind}: pool ${JSON.stringify(def.pool)} must match ${String(POOL_NAME_PATTERN)}`);
  }
  if (def.payloadSchema !== undefined) HANDLER_SCHEMAS.assertCompiles(def.kind, def.payloadSchema);
  return Object.freeze({ ...def });
}

/** One compiled check per schema for the process's handlers. */
const HANDLER_SCHEMAS = new PayloadSchemas();

/** A payload this definition's schema refused (not its `parse`): judged by the process's KindAssertion before it is discarded. */
class SchemaRefusalError extends InvalidPayloadError {}

/** What says whether a payload a definition's schema refused may be discarded: the KindAssertion of the process that runs it. */
export interface RefusalJudge {
  /** Why a job of `kind` made at `createdAt` is kept (snoozed) rather than discarded; undefined: discard it. */
  keepRefused(kind: string, createdAt: Date): Promise<string | undefined>;
}

const JUDGES = new WeakMap<HandlerDefinition, RefusalJudge>();

export function judgeRefusalsBy(def: HandlerDefinition, judge: RefusalJudge): void {
  JUDGES.set(def, judge);
}

/** The handler's payload as it will reach `handle`: schema-checked, then `parse`d. Throws InvalidPayloadError (see judgedError). */
export function handlerPayload<P>(def: HandlerDefinition<P>, payload: unknown): P {
  if (def.payloadSchema) {
    const problems = HANDLER_SCHEMAS.check(def.payloadSchema)(payload);
    if (problems.length > 0) throw new SchemaRefusalError(`${def.kind} payload: ${describeProblems(problems)}`);
  }
  return def.parse ? def.parse(payload) : (payload as P);
}

/**
 * The error a run of job `jobId` ends with: a schema refusal becomes PayloadForAnotherDefinitionError
 * (snoozed) when the definition's judge keeps the job, as the API may have accepted it under another
 * definition in use; a definition no KindAssertion judges discards it.
 */
export async function judgedError(def: HandlerDefinition, jobId: string, error: Error): Promise<Error> {
  const judge = error instanceof SchemaRefusalError ? JUDGES.get(def) : undefined;
  const why = await judge?.keepRefused(def.kind, createdAtFromJobId(jobId));
  return why === undefined ? error : new PayloadForAnotherDefinitionError(error.message, why);
}

export function describeProblems(problems: readonly PayloadProblem[]): string {
  return problems.map((p) => p.message).join('; ');
}

