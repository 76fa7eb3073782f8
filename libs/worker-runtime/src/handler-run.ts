import { describeThrown, type HandlerOutcome, handlerOutcome, isError, progressReport } from '@almanac/domain';
import { type DeliveryMetrics } from '@almanac/delivery';
import { type EffectRecords, type HandlerContext, type HandlerDefinition, handlerPayload, judgedError } from '@almanac/kinds';
import type { EffectsRepository, RunnableJob } from '@almanac/persistence';
import type { Clock } from '@almanac/platform';
import type { Context } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { EntityManager } from 'typeorm';
import { effectRecordsFor } from './effect-records';
import type { LazyTx } from './lazy-tx';

export class HandlerTimeoutError extends Error {
  override readonly name = 'HandlerTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`handler timed out after ${timeoutMs} ms`);
  }
}

export class WorkerShutdownError extends Error {
  override readonly name = 'WorkerShutdownError';
  constructor() { super('worker is shutting down'); }
}

export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor() {
    super('the attempt lost its lease (rescued, or not renewed in time): the job may be running elsewhere');
  }
}

/** How the handler call ended: an outcome, or the error it threw (or timed out with); `logger()` builds the job's logger on first use. */
export interface HandlerRun { outcome?: HandlerOutcome; error?: unknown; logger: () => Logger }

/** What a run's context reaches: the job's transaction and effect records, and the running slot its progress and abort go through. */
export interface RunIo { tx: LazyTx; effects: EffectsRepository; clock: Clock; logger: Logger; slot: { progress?: string; abort?: (reason: Error) => void } }

/**
 * The handler's `ctx`, one per run: a class, not an object literal, since the literal's getters
 * and arrows were closures built for every job; what a handler never reads (its signal, logger,
 * effects, an AbortController and a pino child: ~4 µs of a no-op job) is never built. Its getters
 * read private fields: wrap it by delegation or a spread that names them (double-run.ts), not a Proxy.
 */
class JobContext implements HandlerContext {
  readonly tenantId: number; readonly jobId: string; readonly key: string; readonly kind: string; readonly attempt: number; readonly maxAttempts: number;
  #controller?: AbortController; #aborted?: Error; #logger?: Logger; #effects?: EffectRecords; #tx?: () => Promise<EntityManager>; #progress?: (percent: number, note?: string) => void;
  readonly #row: RunnableJob; readonly #io: RunIo; readonly #timeoutMs: number;

  constructor(row: RunnableJob, io: RunIo, timeoutMs: number, readonly traceContext: Context) {
    ({ tenantId: this.tenantId, id: this.jobId, key: this.key, kind: this.kind, attempt: this.attempt, maxAttempts: this.maxAttempts } = row);
    this.#row = row; this.#io = io; this.#timeoutMs = timeoutMs;
  }

  /** Aborts the handler's signal, if it made one (a static, so handlers see no such method on `ctx`). */
  static abort(ctx: JobContext, reason: Error): void { ctx.#aborted = reason; ctx.#controller?.abort(reason); }
  get signal(): AbortSignal { return (this.#controller ??= controllerAbortedBy(this.#aborted)).signal; }
  get logger(): Logger { return (this.#logger ??= this.#io.logger.child({ tenantId: this.tenantId, jobId: this.jobId, kind: this.kind, attempt: this.attempt })); }
  get effects(): EffectRecords { return (this.#effects ??= effectRecordsFor(this.#io.effects, this.#row, this.#timeoutMs, () => this.logger)); }
  // Functions bound on first read, so `const { tx } = ctx` works as with the literal's arrows.
  get tx(): () => Promise<EntityManager> { return (this.#tx ??= () => this.#io.tx.open(this.traceContext)); }
  get progress(): (percent: number, note?: string) => void { return (this.#progress ??= (percent, note) => void (this.#io.slot.progress = JSON.stringify(progressReport(percent, note, this.attempt, this.#io.clock.now())))); }
}

// A signal first read after its run was aborted (timed out, released) is born aborted.
function controllerAbortedBy(reason: Error | undefined): AbortController { const c = new AbortController(); if (reason) c.abort(reason); return c; }

/**
 * Calls the handler with its context, under its timeout. `io.slot.abort` is set so a shutdown
 * can abort the handler too. Never throws: a throw is the run's `error`.
 */
export async function runHandler(handler: HandlerDefinition, row: RunnableJob, io: RunIo, traceContext: Context, metrics: DeliveryMetrics): Promise<HandlerRun> {
  const ctx = new JobContext(row, io, handler.timeoutMs, traceContext);
  const logger = () => ctx.logger;
  const startedAt = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const payload = handlerPayload(handler, row.payload);
    // One promise that the handler, its timeout or an abort settles first (a race with a second
    // promise cost a few allocations more for every job, which the worker's young GC paid for).
    const outcome = await new Promise<HandlerOutcome>((resolve, reject) => {
      io.slot.abort = (reason: Error) => (JobContext.abort(ctx, reason), reject(reason));
      timer = setTimeout(() => io.slot.abort?.(new HandlerTimeoutError(handler.timeoutMs)), handler.timeoutMs);
      Promise.resolve(handler.handle(ctx, payload)).then(resolve, reject);
    });
    return { outcome: handlerOutcome(outcome), logger };
  } catch (error) {
    return { error: isError(error) ? await judgedError(handler, row.id, error) : new Error(describeThrown(error)), logger };
  } finally {
    clearTimeout(timer);
    metrics.handlerDuration.observe({ kind: row.kind }, (performance.now() - startedAt) / 1000);
  }
}
