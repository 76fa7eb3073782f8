import type { HandlerOutcome } from '@almanac/domain';
import { type DeliveryMetrics } from '@almanac/delivery';
import { type EffectRecords, type HandlerContext, type HandlerDefinition, handlerPayload } from '@almanac/kinds';
import type { RunnableJob } from '@almanac/persistence';
import type { Context } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { LazyTx } from './lazy-tx';

export class HandlerTimeoutError extends Error {
  override readonly name = 'HandlerTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`handler timed out after ${timeoutMs} ms`);
  }
}

export class WorkerShutdownError extends Error {
  override readonly name = 'WorkerShutdownError';
  constructor() {
    super('worker is shutting down');
  }
}

/** How the handler call ended: an outcome, or the error it threw (or timed out with). */
export interface HandlerRun {
  outcome?: HandlerOutcome;
  error?: unknown;
  /** The job's logger, built on first use. */
  logger: () => Logger;
}

/**
 * Calls the handler with its context, under its timeout. `slot.abort` is set so a shutdown can
 * abort the handler too. Never throws: a throw is the run's `error`. The handler's AbortSignal
 * is made only if it reads `ctx.signal` (an AbortController and its listener per job were ~4 µs
 * of a worker's CPU per no-op job); the timeout and an abort end the run either way.
 */
export async function runHandler(
  handler: HandlerDefinition,
  row: RunnableJob,
  slot: { abort?: (reason: Error) => void },
  io: { tx: LazyTx; effects: EffectRecords; progress: (percent: number, note?: string) => void; traceContext: Context },
  metrics: DeliveryMetrics,
  parentLogger: Logger,
): Promise<HandlerRun> {
  // Built only when used: a pino child per job is measurable at thousands of jobs a second.
  let childLogger: Logger | undefined;
  const logger = (): Logger =>
    (childLogger ??= parentLogger.child({ tenantId: row.tenantId, jobId: row.id, kind: row.kind, attempt: row.attempt }));
  const startedAt = performance.now();
  let controller: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;
  const ctx: HandlerContext = {
    tenantId: row.tenantId, jobId: row.id, key: row.key, kind: row.kind, attempt: row.attempt,
    maxAttempts: row.maxAttempts, tx: () => io.tx.open(io.traceContext), effects: io.effects, progress: io.progress, traceContext: io.traceContext,
    get signal() {
      return (controller ??= new AbortController()).signal;
    },
    get logger() {
      return logger();
    },
  };
  try {
    const payload = handlerPayload(handler, row.payload);
    // One promise that the handler, its timeout or an abort settles first (a race with a second
    // promise cost a few allocations more for every job, which the worker's young GC paid for).
    const outcome = await new Promise<HandlerOutcome>((resolve, reject) => {
      slot.abort = (reason: Error) => (controller?.abort(reason), reject(reason));
      timer = setTimeout(() => slot.abort?.(new HandlerTimeoutError(handler.timeoutMs)), handler.timeoutMs);
      Promise.resolve(handler.handle(ctx, payload)).then(resolve, reject);
    });
    return { outcome, logger };
  } catch (error) {
    return { error: error instanceof Error ? error : new Error(String(error)), logger };
  } finally {
    clearTimeout(timer);
    metrics.handlerDuration.observe({ kind: row.kind }, (performance.now() - startedAt) / 1000);
  }
}
