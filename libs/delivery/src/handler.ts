import { KIND_PATTERN, type HandlerOutcome } from '@almanac/domain';
import type { Logger } from 'pino';
import type { EntityManager } from 'typeorm';

/**
 * Outcomes are the domain's values: `completed(result?)`, `retry({delayMs?, reason?})`,
 * `discard(reason)`. Re-exported so a handler file imports everything from one place.
 */
export { completed, discard, retry } from '@almanac/domain';
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
}

export interface HandlerDefinition<P = unknown> {
  kind: string;
  /** Per-attempt deadline: `ctx.signal` aborts then, and the attempt counts as failed. */
  timeoutMs: number;
  /** Worker pool (its ready list and its workers); ALMANAC_POOLS overrides it; default `default`. */
  pool?: string;
  /**
   * Checks and types the stored payload. Throw `InvalidPayloadError` for a payload that can
   * never succeed: the job is discarded instead of retried.
   */
  parse?: (payload: unknown) => P;
  handle(ctx: HandlerContext, payload: P): Promise<HandlerOutcome>;
}

/** The payload can never be handled; retrying would not help, so the job goes to `dead`. */
export class InvalidPayloadError extends Error {
  override readonly name = 'InvalidPayloadError';
}

export class HandlerDefinitionError extends Error {
  override readonly name = 'HandlerDefinitionError';
}

/** Pool names become Redis keys and metric labels: short, lower-case, no separators. */
export const POOL_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** Declares a handler; checks what can be checked before any job runs. */
export function defineHandler<P>(def: HandlerDefinition<P>): HandlerDefinition<P> {
  if (!KIND_PATTERN.test(def.kind)) throw new HandlerDefinitionError(`handler kind ${JSON.stringify(def.kind)} must match ${String(KIND_PATTERN)}`);
  if (!Number.isInteger(def.timeoutMs) || def.timeoutMs < 1 || def.timeoutMs > 24 * 3600_000) {
    throw new HandlerDefinitionError(`handler ${def.kind}: timeoutMs must be an integer from 1 to 86400000`);
  }
  if (def.pool !== undefined && !POOL_NAME_PATTERN.test(def.pool)) {
    throw new HandlerDefinitionError(`handler ${def.kind}: pool ${JSON.stringify(def.pool)} must match ${String(POOL_NAME_PATTERN)}`);
  }
  return Object.freeze({ ...def });
}

