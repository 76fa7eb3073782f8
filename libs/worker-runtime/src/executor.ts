import type { Hint, RetryPolicy, TierHorizons } from '@almanac/domain';
import type { DeliveryMetrics } from '@almanac/delivery';
import type { HandlerDefinition, HandlerRegistry } from '@almanac/kinds';
import { type DeliveryRef, EffectsRepository, type ExecutionRepository, refKey, type RunnableJob } from '@almanac/persistence';
import { CLAIM_RETRY_WITHIN_MS, type Clock, HEARTBEAT_MS, type HotQueue, MAX_EARLY_WAIT_MS, WaitTimeoutError } from '@almanac/platform';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { AttemptWriter, type WriteResult } from './attempt-writer';
import { type ClaimAnswer, Claimer } from './claimer';
import { LeaseLostError, runHandler, WorkerShutdownError } from './handler-run';
import { LazyTx } from './lazy-tx';
import { RunSpan } from './run-span';
import type { WorkerIdentity } from './worker-identity';

/** How a taken hint ended: written (or submitted), stale, released at shutdown, or not started (`give_back` to its pool). */
export type ExecutionResult = WriteResult | 'released' | 'give_back';

export interface ExecutorOptions {
  repo: ExecutionRepository;
  dataSource: DataSource;
  registry: HandlerRegistry;
  hotQueue: HotQueue;
  clock: Clock;
  logger: Logger;
  metrics: DeliveryMetrics;
  identity: WorkerIdentity;
  horizons: TierHorizons;
  retryPolicy: RetryPolicy;
  /** Lease a claim starts with; extendLeases() renews it while the handler runs. */
  leaseMs: number;
  /** Largest group commit (default 500); claims take at most a third of it (see Claimer). */
  maxBatch?: number;
  /** How long a failing claim is sent again before its hint goes back (default 5 s). */
  claimRetryForMs?: number;
}

interface Running {
  pool: string; ref: DeliveryRef; kind: string; startedAt: Date; leaseUntil: number; released: boolean;
  abort?: (reason: Error) => void;
  /** The handler's latest progress report as JSON, not written yet (extendLeases writes it). */
  progress?: string;
}

/**
 * Runs taken hints: waits for each row's due time, claims it (the attempt is counted there, once),
 * runs the handler under its timeout and records the outcome; extendLeases() renews their leases.
 */
export class Executor {
  private readonly claimer: Claimer;
  readonly writer: AttemptWriter;
  private readonly effects: EffectsRepository;
  private readonly running = new Map<string, Running>();
  /** Set once unfinished work was released: later hints are given straight back. */
  private stopping = false;

  constructor(private readonly o: ExecutorOptions) {
    const maxBatch = o.maxBatch ?? 500;
    this.effects = new EffectsRepository(o.dataSource);
    this.claimer = new Claimer({ ...o, maxBatch: Math.max(1, Math.floor(maxBatch / 3)), retryForMs: o.claimRetryForMs });
    this.writer = new AttemptWriter({ ...o, maxBatch, workerName: o.identity.name });
  }

  async execute(pool: string, hint: Hint): Promise<ExecutionResult> {
    const handler = this.o.registry.get(hint.kind);
    if (!handler) {
      // No handler here (a rolling update, a misrouted kind): not claimed, so no attempt is spent.
      // The hint is dropped and the overdue sweep offers the row again, one hint at a time.
      this.o.metrics.dropped.inc({ reason: 'unknown_kind' });
      return 'stale';
    }
    const claim = { fromMs: 0, toMs: 0 };
    const answer = await this.claimWhenDue(hint, claim).catch((err: unknown): 'give_back' => {
      this.o.logger.warn({ err, jobId: hint.id }, 'claim failed; giving the hint back for a later take');
      return 'give_back';
    });
    if (answer === 'give_back' || answer === 'stale') return answer;
    if (this.stopping) {
      // Claimed while the shutdown released the rest: back to queued at once; its hint goes back.
      await this.o.repo.release([{ id: answer.row.id, attempt: answer.row.attempt }], this.o.clock.now(), this.o.identity.name, []);
      return 'give_back';
    }
    return this.run(pool, hint, handler, answer.row, answer.leaseUntilMs, new RunSpan(answer.row, pool, claim));
  }

  /**
   * Waits for the due time, then claims. A row not due yet by this clock is waited for and claimed
   * again, or, due beyond CLAIM_RETRY_WITHIN_MS, gets a hint for its own time and this one is
   * dropped. `timing`: when the last claim was sent and answered (for the run's span).
   */
  private async claimWhenDue(hint: Hint, timing: { fromMs: number; toMs: number }): Promise<Exclude<ClaimAnswer, { earlyDueMs: number }> | 'give_back'> {
    for (let dueMs = hint.dueMs; ; ) {
      if ((this.stopping || dueMs > this.o.clock.now().getTime()) && !(await this.until(dueMs))) return 'give_back';
      timing.fromMs = Date.now();
      const answer = await this.claimer.submit(hint.id);
      timing.toMs = Date.now();
      if (answer === 'stale' || !('earlyDueMs' in answer)) return answer;
      dueMs = answer.earlyDueMs;
      if (dueMs - this.o.clock.now().getTime() <= CLAIM_RETRY_WITHIN_MS) continue;
      this.o.metrics.dropped.inc({ reason: 'moved_later' }); // a hint for its own time; the row stays queued, no attempt spent
      await this.writer.requeue([{ id: hint.id, tenantId: hint.tenantId, kind: hint.kind, dueMs }]);
      return 'stale';
    }
  }

  /** Waits until `dueMs` by this worker's clock (takes come at most TAKE_AHEAD_MS early), at most MAX_EARLY_WAIT_MS; false if the worker stops. */
  private async until(dueMs: number): Promise<boolean> {
    const cap = Date.now() + MAX_EARLY_WAIT_MS;
    for (let wait; !this.stopping && (wait = Math.min(dueMs - this.o.clock.now().getTime(), cap - Date.now())) > 0; ) await new Promise((r) => setTimeout(r, Math.min(wait, 50))); // a stop is seen within 50 ms
    return !this.stopping;
  }

  private async run(pool: string, hint: Hint, handler: HandlerDefinition, row: RunnableJob, leaseUntilMs: number, span: RunSpan): Promise<ExecutionResult> {
    const { clock, metrics } = this.o;
    const startedAt = clock.now();
    const entry: Running = { pool, ref: { id: row.id, attempt: row.attempt }, kind: row.kind, startedAt, leaseUntil: leaseUntilMs, released: false };
    const key = refKey(entry.ref);
    this.running.set(key, entry);
    const io = { tx: new LazyTx(this.o.dataSource), effects: this.effects, clock, logger: this.o.logger, slot: entry };
    try {
      metrics.observeLag(pool, row.tenantId, Math.max(0, startedAt.getTime() - hint.dueMs) / 1000);
      const outcome = await span.handler(row.kind, (traceContext) => runHandler(handler, row, io, traceContext, metrics));
      if (entry.released) return (span.end('released'), 'released');
      const written = await span.write(() => this.writer.write(row, outcome, io.tx, startedAt, entry.leaseUntil));
      return entry.released ? 'released' : written; // the shutdown's release won the row: its hint goes back
    } finally {
      await io.tx.rollback().catch(() => undefined); // unless written (released, or an error escaped): else its connection stayed out for good
      if (this.running.get(key) === entry) this.running.delete(key);
    }
  }

  /**
   * Renews the leases with less than two thirds left (a handler shorter than a third of the lease
   * never costs a write) and those with progress to write. Returns how many were renewed.
   */
  async extendLeases(): Promise<number> {
    const now = this.o.clock.now().getTime();
    const due = [...this.running.values()].filter((e) => e.progress !== undefined || e.leaseUntil - now < (this.o.leaseMs * 2) / 3);
    if (due.length === 0) return 0;
    const until = this.claimer.leaseFrom(now);
    const sent = due.map((e) => ({ ...e.ref, progress: e.progress }));
    // A run whose lease is gone (rescued, or expired unrenewed) may be running elsewhere by now: its handler is stopped.
    // A renewal that never answers (its connection gone quiet) fails as the soonest of these leases ends, so that run is stopped
    // then; in a beat at least, and a third of a lease at most, so the next one (perhaps on a fresh connection) goes out in time.
    // Given up, its connection is discarded: one hung on a quiet connection held a pooled one every turn.
    const answerMs = Math.min(Math.max(Math.min(...due.map((e) => e.leaseUntil)) - now, HEARTBEAT_MS), this.o.leaseMs / 3);
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new WaitTimeoutError('lease renewal', answerMs)), answerMs);
    const held = await this.o.repo.extendLeases(sent, new Date(until), stop.signal).catch((err: unknown) => {
      for (const e of due) if (e.leaseUntil <= this.o.clock.now().getTime()) e.abort?.(new LeaseLostError());
      throw err;
    }).finally(() => clearTimeout(timer));
    due.forEach((e, i) => {
      if (e.progress === sent[i].progress) e.progress = undefined; // written, or its run is gone; a newer report waits for the next beat
      if (held.has(refKey(e.ref))) e.leaseUntil = until; // by attempt too: an older attempt of a row claimed again is stopped
      else e.abort?.(new LeaseLostError());
    });
    return held.size;
  }

  /**
   * Graceful shutdown, after the deadline: every unfinished attempt goes back to queued (a
   * `released` history row), then its handler is aborted; its late completion changes nothing.
   * Hints waiting for their due time go back unclaimed. Returns the rows released, per pool.
   */
  async releaseUnfinished(): Promise<Map<string, string[]>> {
    this.stopping = true;
    await this.claimer.drain(); // claims in flight land first, and those rows are released too
    const entries = [...this.running.values()];
    const out = new Map<string, string[]>();
    if (entries.length === 0) return out;
    const done = await this.o.repo.release(entries.map((e) => e.ref), this.o.clock.now(), this.o.identity.name, entries.map((e) => e.startedAt));
    const ids = new Set(done.map((r) => r.id));
    for (const e of entries) {
      if (!ids.has(e.ref.id)) continue;
      e.released = true;
      e.abort?.(new WorkerShutdownError());
      out.set(e.pool, [...(out.get(e.pool) ?? []), e.ref.id]);
      this.o.metrics.executions.inc({ kind: e.kind, outcome: 'released' });
    }
    this.o.logger.warn({ released: done.length, unfinished: entries.length }, 'released unfinished jobs at shutdown');
    return out;
  }

  /** Waits for claims and group commits in flight (shutdown, tests). */
  async drain(): Promise<void> {
    await this.claimer.drain();
    await this.writer.drain();
  }
}
