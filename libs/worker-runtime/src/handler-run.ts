import type { HandlerOutcome } from '@almanac/domain';
import { type DeliveryMetrics, type EffectRecords, type HandlerContext, type HandlerDefinition, handlerPayload } from '@almanac/delivery';
import type { RunnableJob } from '@almanac/persistence';
import type { Logger } from 'pino';
import type { LazyTx } from './lazy-tx';

export class UnknownKindError extends Error {
  override readonly name = 'UnknownKindError';
  constructor(readonly kind: string) {
    super(`no handler registered for kind ${kind}`);
  }
}

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
 * abort the handler too. Never throws: a throw is the run's `error`.
 */
export async function runHandler(
  handler: HandlerDefinition | undefined,
  row: RunnableJob,
  slot: { abort?: (reason: Error) => void },
  io: { tx: LazyTx; effects: EffectRecords },
  metrics: DeliveryMetrics,
  parentLogger: Logger,
): Promise<HandlerRun> {
  // Built only when used: a pino child per job is measurable at thousands of jobs a second.
  let childLogger: Logger | undefined;
  const logger = (): Logger =>
    (childLogger ??= parentLogger.child({ tenantId: row.tenantId, jobId: row.id, kind: row.kind, attempt: row.attempt }));
  if (!handler) return { error: new UnknownKindError(row.kind), logger };
  const endTimer = metrics.handlerDuration.startTimer({ kind: row.kind });
  // One controller per job (not AbortSignal.any over a long-lived shutdown signal, which keeps
  // every job's signal reachable): the timeout and releaseUnfinished() abort it.
  const ac = new AbortController();
  slot.abort = (reason) => ac.abort(reason);
  const timer = setTimeout(() => ac.abort(new HandlerTimeoutError(handler.timeoutMs)), handler.timeoutMs);
  const ctx: HandlerContext = {
    tenantId: row.tenantId, jobId: row.id, key: row.key, kind: row.kind, attempt: row.attempt,
    maxAttempts: row.maxAttempts, signal: ac.signal, tx: () => io.tx.open(), effects: io.effects,
    get logger() {
      return logger();
    },
  };
  try {
    const payload = handlerPayload(handler, row.payload);
    return { outcome: await untilAborted(handler.handle(ctx, payload), ac.signal), logger };
  } catch (error) {
    return { error, logger };
  } finally {
    clearTimeout(timer);
    endTimer();
  }
}

/** The handler's promise, or a rejection as soon as its signal aborts (a handler may ignore it). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}
