import type { HandlerOutcome, RetryPolicy, TierHorizons } from '@almanac/domain';
import type { CompletionRecord, DeliveryRef, ExecutionRepository, RunnableJob } from '@almanac/persistence';
import type { Clock, HotItem, HotQueue } from '@almanac/platform';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { HandlerContext, InvalidPayloadError } from '../handlers/handler';
import type { HandlerRegistry } from '../handlers/registry';
import type { DeliveryMetrics } from './delivery-metrics';
import { failureDecision } from './failure-policy';
import { LazyTx } from './lazy-tx';
import { MicroBatcher } from './micro-batcher';

/** One pool-queue delivery as the executor sees it. */
export interface Delivery {
  id: string;
  attempt: number;
  /** due time, epoch ms */
  dueMs: number;
  pool: string;
}

/**
 * applied: the outcome was recorded; stale: another delivery owns the job; released: given back
 * at shutdown; submitted: the handler is done and its outcome waits in a group commit.
 */
export type ExecutionResult = 'applied' | 'stale' | 'released' | 'submitted';

/** Group commits waiting beyond this make new deliveries wait (backpressure on a slow database). */
const MAX_PENDING_COMMITS = 5000;

export interface ExecutorOptions {
  repo: ExecutionRepository;
  dataSource: DataSource;
  registry: HandlerRegistry;
  hotQueue: HotQueue;
  clock: Clock;
  logger: Logger;
  metrics: DeliveryMetrics;
  workerId: string;
  horizons: TierHorizons;
  retryPolicy: RetryPolicy;
  /** Largest group commit / row load (default 500). */
  maxBatch?: number;
}

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

/** The longest a delivery that came early waits for its run time (see DELIVERY_LEAD_MS). */
export const MAX_EARLY_WAIT_MS = 2000;

/** Stored error text is bounded: a handler's exception may carry a whole response body. */
export const MAX_ERROR_LENGTH = 2000;

export function truncateError(message: string): string {
  return message.length <= MAX_ERROR_LENGTH ? message : `${message.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

interface Running {
  ref: DeliveryRef;
  kind: string;
  startedAt: Date;
  released: boolean;
  onReleased: () => void;
  abort?: (reason: Error) => void;
}

/**
 * Runs deliveries: loads the row (batched), checks the delivery is current, runs the handler
 * under its timeout, and records the outcome with a guarded update — in the handler's own
 * transaction when it opened one, otherwise in a group commit shared with other jobs.
 */
export class Executor {
  private readonly loader: MicroBatcher<DeliveryRef, RunnableJob | undefined>;
  private readonly completer: MicroBatcher<{ record: CompletionRecord; kind: string }, boolean>;
  /** Set once unfinished work was released: later deliveries are given straight back. */
  private stopping = false;
  private readonly running = new Map<string, Running>();
  private readonly settling = new Set<Promise<void>>();

  constructor(private readonly o: ExecutorOptions) {
    const maxBatch = o.maxBatch ?? 500;
    this.loader = new MicroBatcher((refs) => this.load(refs), { maxBatch, maxInFlight: 2 });
    this.completer = new MicroBatcher((recs) => this.completeBatch(recs), { maxBatch, maxInFlight: 2 });
  }

  get inFlight(): number {
    return this.running.size;
  }

  async execute(d: Delivery): Promise<ExecutionResult> {
    // Fetched after the shutdown deadline: give it straight back rather than start it.
    if (this.stopping) return this.giveBack(d);
    const row = await this.loader.submit({ id: d.id, attempt: d.attempt });
    if (!row) {
      this.o.metrics.dropped.inc({ reason: 'stale_delivery' });
      return 'stale';
    }
    // Deliveries arrive up to DELIVERY_LEAD_MS (plus clock skew) early: no handler starts before
    // its run time. Capped, so a far-off clock cannot park a delivery.
    const early = row.runAt.getTime() - this.o.clock.now().getTime();
    if (early > 0) await new Promise((r) => setTimeout(r, Math.min(early, MAX_EARLY_WAIT_MS)));
    if (this.stopping) return this.giveBack(d);
    const key = `${d.id}:${d.attempt}`;
    let onReleased!: () => void;
    const released = new Promise<ExecutionResult>((resolve) => {
      onReleased = () => resolve('released');
    });
    const entry: Running = { ref: { id: d.id, attempt: d.attempt }, kind: row.kind, startedAt: this.o.clock.now(), released: false, onReleased };
    this.running.set(key, entry);
    try {
      return await Promise.race([this.run(row, d, entry), released]);
    } finally {
      if (this.running.get(key) === entry) this.running.delete(key);
    }
  }

  /**
   * Graceful shutdown, after the deadline: gives every unfinished delivery back (running →
   * queued, re-enqueued now, a `released` history row), then aborts the handlers. Their late
   * completions find the row moved and change nothing.
   */
  async releaseUnfinished(): Promise<number> {
    this.stopping = true;
    const entries = [...this.running.values()];
    let count = 0;
    if (entries.length > 0) {
      const done = await this.releaseRefs(entries);
      const ids = new Set(done.map((r) => r.id));
      for (const e of entries) {
        if (!ids.has(e.ref.id)) continue;
        e.released = true;
        e.onReleased();
        e.abort?.(new WorkerShutdownError());
        this.o.metrics.executions.inc({ kind: e.kind, outcome: 'released' });
      }
      count = done.length;
      this.o.logger.warn({ released: count, unfinished: entries.length }, 'released unfinished jobs at shutdown');
    }
    return count;
  }

  /** A delivery not started because the worker is stopping: back to queued, re-enqueued. */
  private async giveBack(d: Delivery): Promise<ExecutionResult> {
    await this.releaseRefs([{ ref: { id: d.id, attempt: d.attempt }, startedAt: this.o.clock.now() }]);
    return 'released';
  }

  private async releaseRefs(entries: { ref: DeliveryRef; startedAt: Date }[]): Promise<{ id: string }[]> {
    const now = this.o.clock.now();
    const done = await this.o.repo.release(entries.map((e) => e.ref), now, this.o.workerId, entries.map((e) => e.startedAt));
    const attemptOf = new Map(entries.map((e) => [e.ref.id, e.ref.attempt]));
    await this.requeue(done.map((r) => ({ id: r.id, runAt: now, tenantId: r.tenantId, kind: r.kind, afterAttempt: attemptOf.get(r.id) })), now);
    return done;
  }

  /** Waits for queued group commits (shutdown, tests). */
  async drain(): Promise<void> {
    await this.loader.drain();
    await this.completer.drain();
    await Promise.all([...this.settling]);
  }

  private async run(row: RunnableJob, d: Delivery, entry: Running): Promise<ExecutionResult> {
    const { clock, metrics } = this.o;
    const handler = this.o.registry.get(row.kind);
    const startedAt = clock.now();
    entry.startedAt = startedAt;
    metrics.lag.observe({ pool: d.pool }, Math.max(0, startedAt.getTime() - d.dueMs) / 1000);
    // Built only when used: a pino child per job is measurable at thousands of jobs a second.
    let childLogger: Logger | undefined;
    const parentLogger = this.o.logger;
    const logger = (): Logger =>
      (childLogger ??= parentLogger.child({ tenantId: row.tenantId, jobId: row.id, kind: row.kind, attempt: row.attempt }));
    const tx = new LazyTx(this.o.dataSource);
    let outcome: HandlerOutcome | undefined;
    let error: unknown;
    if (!handler) {
      error = new UnknownKindError(row.kind);
    } else {
      const endTimer = metrics.handlerDuration.startTimer({ kind: row.kind });
      // One controller per job (not AbortSignal.any over a long-lived shutdown signal, which
      // keeps every job's signal reachable): the timeout and releaseUnfinished() abort it.
      const ac = new AbortController();
      entry.abort = (reason) => ac.abort(reason);
      const timer = setTimeout(() => ac.abort(new HandlerTimeoutError(handler.timeoutMs)), handler.timeoutMs);
      const ctx: HandlerContext = {
        tenantId: row.tenantId, jobId: row.id, key: row.key, kind: row.kind, attempt: row.attempt,
        maxAttempts: row.maxAttempts, signal: ac.signal, tx: () => tx.open(),
        get logger() {
          return logger();
        },
      };
      try {
        const payload = handler.parse ? handler.parse(row.payload) : row.payload;
        outcome = await untilAborted(handler.handle(ctx, payload), ac.signal);
      } catch (err) {
        error = err;
      } finally {
        clearTimeout(timer);
        endTimer();
      }
    }
    if (entry.released) {
      await tx.rollback().catch(() => undefined);
      return 'released';
    }
    const record = this.toRecord(row, outcome, error, startedAt);
    if (tx.opened && error === undefined) {
      let applied: boolean;
      try {
        applied = await tx.finish(async (em) => (await this.o.repo.complete([record], clock.now(), em)).has(row.id));
        if (applied && record.next === 'queued') await this.requeue([hotItem(record, row.kind)], clock.now());
      } catch (err) {
        // The commit itself failed: nothing of the handler's survived, so this is a failed attempt.
        const failed = this.toRecord(row, undefined, err, startedAt);
        return this.afterCommit(await this.completer.submit({ record: failed, kind: row.kind }), row, failed, err, logger);
      }
      return this.afterCommit(applied, row, record, error, logger);
    }
    await tx.rollback().catch((err: unknown) => logger().warn({ err }, 'rollback failed'));
    // Group commit in the background: the delivery's slot is free as soon as the handler is
    // done, so a slow WAL flush does not hold back the next handler starts (dispatch lag).
    // If the process dies before the commit, the row is still running: the lease rescue
    // runs the job again, which is the same guarantee as a worker dying mid-handler.
    const settle = this.completer.submit({ record, kind: row.kind }).then(
      (applied) => {
        this.afterCommit(applied, row, record, error, logger);
      },
      (err: unknown) => logger().error({ err }, 'could not record the outcome; the lease rescue will run the job again'),
    );
    this.settling.add(settle);
    void settle.finally(() => this.settling.delete(settle));
    while (this.settling.size > MAX_PENDING_COMMITS) await Promise.race(this.settling);
    return 'submitted';
  }

  private afterCommit(applied: boolean, row: RunnableJob, record: CompletionRecord, error: unknown, logger: () => Logger): ExecutionResult {
    const { metrics } = this.o;
    if (!applied) {
      metrics.dropped.inc({ reason: 'stale_completion' });
      logger().info('completion not recorded: the job moved on (rescued, released or done by another delivery)');
      return 'stale';
    }
    metrics.executions.inc({ kind: row.kind, outcome: record.outcome });
    if (record.outcome !== 'succeeded') {
      logger().warn({ outcome: record.outcome, next: record.next, err: error instanceof Error ? error.message : record.error }, 'attempt did not complete');
    }
    return 'applied';
  }

  private toRecord(row: RunnableJob, outcome: HandlerOutcome | undefined, error: unknown, startedAt: Date): CompletionRecord {
    const now = this.o.clock.now();
    const base = { id: row.id, attempt: row.attempt, tenantId: row.tenantId, startedAt, finishedAt: now, workerId: this.o.workerId };
    const fail = (delayMs: number | undefined) =>
      failureDecision({ attempt: row.attempt, maxAttempts: row.maxAttempts, delayMs, now, horizons: this.o.horizons, policy: this.o.retryPolicy });
    if (outcome === undefined) {
      const message = truncateError(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      if (error instanceof InvalidPayloadError) return { ...base, next: 'dead', outcome: 'discarded', error: message };
      const decision = fail(undefined);
      return { ...base, ...decision, outcome: 'failed', error: message };
    }
    switch (outcome.type) {
      case 'completed':
        return { ...base, next: 'succeeded', outcome: 'succeeded', result: outcome.result, error: null };
      case 'retry':
        return { ...base, ...fail(outcome.delayMs), outcome: 'failed', result: outcome.result, error: truncateError(outcome.reason ?? 'retry requested') };
      case 'discard':
        return { ...base, next: 'dead', outcome: 'discarded', result: outcome.result, error: truncateError(outcome.reason) };
    }
  }

  private async load(refs: DeliveryRef[]): Promise<(RunnableJob | undefined)[]> {
    const rows = await this.o.repo.loadForExecution(refs);
    const byKey = new Map(rows.map((r) => [`${r.id}:${r.attempt}`, r]));
    return refs.map((r) => byKey.get(`${r.id}:${r.attempt}`));
  }

  /** One guarded UPDATE + one history INSERT for the whole batch, then one addBulk for retries due soon. */
  private async completeBatch(items: { record: CompletionRecord; kind: string }[]): Promise<boolean[]> {
    // Two deliveries of one job in one batch: the first one speaks, the other is stale.
    const first = new Map<string, { record: CompletionRecord; kind: string }>();
    for (const i of items) if (!first.has(i.record.id)) first.set(i.record.id, i);
    const now = this.o.clock.now();
    const applied = await this.o.repo.complete([...first.values()].map((i) => i.record), now);
    const requeue = [...first.values()].filter((i) => i.record.next === 'queued' && applied.has(i.record.id));
    await this.requeue(requeue.map((i) => hotItem(i.record, i.kind)), now);
    return items.map((i) => first.get(i.record.id) === i && applied.has(i.record.id));
  }

  /** A retry due soon goes back on the hot queue; if Redis refuses, the overdue sweep re-enqueues it. */
  private async requeue(items: HotItem[], now: Date): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.o.hotQueue.enqueue(items, now);
    } catch (err) {
      this.o.logger.error({ err, jobs: items.length }, 'could not re-enqueue; the overdue sweep will');
    }
  }
}

function hotItem(r: CompletionRecord, kind: string): HotItem {
  return { id: r.id, runAt: r.runAt ?? new Date(), tenantId: r.tenantId, kind, afterAttempt: r.attempt };
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
