import type { RetryPolicy, TierHorizons } from '@almanac/domain';
import type { DeliveryMetrics, HandlerRegistry, ReadyItem, ReadyLists } from '@almanac/delivery';
import { type ClaimedAhead, type CompletionRecord, type DeliveryRef, EffectsRepository, type ExecutionRepository, type RunnableJob } from '@almanac/persistence';
import { Clock, DELIVERY_LEAD_MS, HotItem, HotQueue, MicroBatcher, within } from '@almanac/platform';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { attemptRecord } from './attempt-record';
import { Claimer } from './claimer';
import { effectRecordsFor } from './effect-records';
import { HandlerRun, runHandler, WorkerShutdownError } from './handler-run';
import { LazyTx } from './lazy-tx';


/** One ready-list item as the executor sees it. */
export interface Delivery {
  id: string;
  /** due time, epoch ms */
  dueMs: number;
  pool: string;
  /** The limit slots its hand-off holds (a limited tenant's job), kept if it is given back. */
  slots?: ReadyItem['slots'];
}

/**
 * applied: the outcome was recorded; stale: the row did not want this delivery (cancelled, run
 * by another delivery, …); released: released at shutdown; given_back: not started, back at the
 * head of its ready list (it keeps its limit slots); submitted: the handler is done and its
 * outcome waits in a group commit.
 */
export type ExecutionResult = 'applied' | 'stale' | 'released' | 'submitted' | 'given_back';

/** Group commits waiting beyond this make new deliveries wait (backpressure on a slow database). */
const MAX_PENDING_COMMITS = 5000;

/** A count at start is retried only while this much of the claim's lease is left. */
const COUNT_RETRY_MARGIN_MS = 5000;

/** The longest a delivery that came early waits for its run time (see DELIVERY_LEAD_MS). */
export const MAX_EARLY_WAIT_MS = 2000;

export interface ExecutorOptions {
  repo: ExecutionRepository;
  dataSource: DataSource;
  registry: HandlerRegistry;
  hotQueue: HotQueue;
  ready: ReadyLists;
  clock: Clock;
  logger: Logger;
  metrics: DeliveryMetrics;
  workerId: string;
  horizons: TierHorizons;
  retryPolicy: RetryPolicy;
  /** Lease a claim starts with; extendLeases() renews it while the handler runs. */
  leaseMs: number;
  /** Largest claim / group commit (default 500). */
  maxBatch?: number;
  /** How long before its run time a delivery is claimed (default CLAIM_LEAD_MS). */
  claimLeadMs?: number;
  /** After a failed claim (Postgres down), the pause before it is undone and given back (default 1 s). */
  claimRetryPauseMs?: number;
}

/**
 * A delivery is claimed up to this long before its run time, so the claim's round trip stays out
 * of the lag: hot jobs arrive HANDOFF_AHEAD_MS (50 ms) ahead, and a light tenant's job behind a
 * full pool as soon as the dispatcher has it, up to DELIVERY_LEAD_MS (150 ms) ahead (its light
 * slot waits, not a main one; see HotConsumer.holdMs). Its attempt is counted only as the handler
 * starts (countAttempt), so a worker killed in between uses up no attempt.
 */
export const CLAIM_LEAD_MS = DELIVERY_LEAD_MS;

interface Running {
  ref: DeliveryRef;
  /** The attempt is counted (false between a claim ahead of the run time and the start). */
  counted: boolean;
  kind: string;
  startedAt: Date;
  leaseUntil: number;
  released: boolean;
  onReleased: () => void;
  abort?: (reason: Error) => void;
}

/**
 * Runs deliveries: waits for the run time, claims the row as the handler starts (batched), runs
 * the handler under its timeout, and records the outcome with a guarded update — in the
 * handler's own transaction when it opened one, otherwise in a group commit shared with other
 * jobs. While handlers run, extendLeases() keeps their leases ahead of the clock.
 */
export class Executor {
  private readonly claimer: Claimer;
  /** Counts the attempts of rows claimed ahead, as their handlers start (batched). */
  private readonly starter: MicroBatcher<ClaimedAhead, boolean>;
  private readonly completer: MicroBatcher<{ record: CompletionRecord; kind: string }, boolean>;
  /** Set once unfinished work was released: later deliveries are given straight back. */
  private stopping = false;
  /** Set when the worker starts shutting down: failed outcome writes are no longer retried. */
  private closing = false;
  private readonly running = new Map<string, Running>();
  private readonly settling = new Set<Promise<void>>();

  /** ctx.effects' records, on the executor's own pool (they commit apart from the job's transaction). */
  private readonly effects: EffectsRepository;

  constructor(private readonly o: ExecutorOptions) {
    const maxBatch = o.maxBatch ?? 500;
    this.effects = new EffectsRepository(o.dataSource);
    this.claimer = new Claimer({ ...o, maxBatch });
    this.starter = new MicroBatcher(async (refs) => {
      const started = await o.repo.startClaimed(refs, o.clock.now());
      return refs.map((r) => started.has(r.id));
    }, { maxBatch, maxInFlight: 2 });
    this.completer = new MicroBatcher((recs) => this.completeBatch(recs), { maxBatch, maxInFlight: 2 });
  }

  get inFlight(): number {
    return this.running.size;
  }

  async execute(d: Delivery): Promise<ExecutionResult> {
    if (this.stopping) return this.giveBack(d);
    // Claimed claimLeadMs before its run time, so the claim's round trip is not added to the
    // lag (claiming at the run time put p99 lag at 13-18 ms instead of under 10, at 500 jobs/s).
    // The handler still starts at the run time, and `started_at` is that instant.
    await this.untilClaimTime(d.dueMs - (this.o.claimLeadMs ?? CLAIM_LEAD_MS));
    if (this.stopping) return this.giveBack(d);
    let row: RunnableJob | undefined;
    try {
      row = await this.claimer.submit(d.id);
    } catch (err) {
      // Postgres is restarting or stalled; the claimer paused and undid whatever the claim may
      // have taken. Hand the delivery back to its ready list rather than leave the row to the
      // overdue sweep: the chaos bench measured jobs 80-110 s late after a Postgres restart or
      // stall that way.
      this.o.logger.warn({ err, jobId: d.id }, 'claim failed; giving the delivery back');
      return this.giveBack(d);
    }
    if (!row) return 'stale';
    if (this.stopping) return this.releaseClaimed(row); // claimed while the shutdown released the rest
    const key = `${row.id}:${row.attempt}`;
    let onReleased!: () => void;
    const released = new Promise<ExecutionResult>((resolve) => {
      onReleased = () => resolve('released');
    });
    const now = this.o.clock.now();
    const entry: Running = {
      ref: { id: row.id, attempt: row.attempt }, counted: row.counted, kind: row.kind, startedAt: now,
      leaseUntil: now.getTime() + this.o.leaseMs, released: false, onReleased,
    };
    this.running.set(key, entry);
    try {
      await this.untilRunTime(row.runAt.getTime(), released, () => entry.released);
      if (entry.released) return 'released';
      // Counted as the handler starts, not before: the count's round trip runs alongside the
      // handler instead of adding to the lag (awaiting it first put p99 lag at 17-19 ms at 500
      // jobs/s instead of 9-10), and the outcome is written only once it has landed.
      const counted = entry.counted ? Promise.resolve(true) : this.countAttempt(row, entry);
      return await Promise.race([this.run(row, d, entry, counted), released]);
    } finally {
      if (this.running.get(key) === entry) this.running.delete(key);
    }
  }

  /**
   * A row claimed ahead of its run time has its attempt counted as its handler starts, so a
   * worker killed in the claim lead uses up no attempt (the faults bench left ~5 `lost` attempts
   * per SIGKILL for handlers that never started). False: the row is no longer this claim's
   * (rescued and claimed again), or Postgres failed until the lease was nearly over; the outcome
   * is then not written, and the lease rescue requeues the row, as after a crash. A worker that dies within the count's
   * round trip (~1-2 ms) of a handler start leaves that run uncounted.
   */
  private async countAttempt(row: RunnableJob, entry: Running): Promise<boolean> {
    // The handler is already running: a count that fails (Postgres blip, lost reply) is sent
    // again (it is idempotent) while the lease lasts, as a completion write is. Giving up at once
    // threw away a run that happened, and the lease rescue then ran the job a second time. It
    // must land well before the lease ends, and the outcome waits for it: short pauses.
    const ref = { id: row.id, attempt: row.attempt, leaseUntil: row.leaseUntil };
    try {
      entry.counted = await this.whileLeased(() => this.starter.submit(ref), row.leaseUntil.getTime() - COUNT_RETRY_MARGIN_MS, {
        firstPauseMs: 100, maxPauseMs: 2000, what: 'count the attempt at start', jobId: row.id,
      });
    } catch (err) {
      this.o.logger.warn({ err, jobId: row.id }, 'could not count the attempt at start; the lease rescue requeues the job');
      return false;
    }
    if (!entry.counted) this.o.metrics.dropped.inc({ reason: 'raced' });
    return entry.counted;
  }

  /**
   * Runs a write that a running or finished handler depends on, again after a failure, until
   * `deadlineMs` (the lease, less a margin): past it the lease rescue takes over, as after a
   * crash. Not during a shutdown: retries could outlast the pod's grace period.
   */
  private async whileLeased<T>(
    write: () => Promise<T>, deadlineMs: number, o: { firstPauseMs: number; maxPauseMs: number; what: string; jobId: string },
  ): Promise<T> {
    for (let pause = o.firstPauseMs; ; pause = Math.min(pause * 2, o.maxPauseMs)) {
      try {
        return await write();
      } catch (err) {
        if (this.stopping || this.closing || this.o.clock.now().getTime() + pause >= deadlineMs) throw err;
        this.o.logger.warn({ err, jobId: o.jobId }, `could not ${o.what}; trying again in ${pause} ms`);
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }

  /** Waits (capped, real time) until the claim time; a shutdown meanwhile is seen by the caller. */
  private async untilClaimTime(claimAtMs: number): Promise<void> {
    const wait = Math.min(claimAtMs - this.o.clock.now().getTime(), MAX_EARLY_WAIT_MS);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  /**
   * No handler starts early. A timer may fire a millisecond before the clock reaches its
   * deadline, so wait again until it has; capped (real time), so a far-off clock cannot park a
   * delivery.
   */
  private async untilRunTime(runAtMs: number, released: Promise<unknown>, isReleased: () => boolean): Promise<void> {
    const cap = Date.now() + MAX_EARLY_WAIT_MS;
    while (!isReleased()) {
      const early = Math.min(runAtMs - this.o.clock.now().getTime(), cap - Date.now());
      if (early <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise((r) => (timer = setTimeout(r, early)));
      await Promise.race([waited, released]).finally(() => clearTimeout(timer));
      if (Date.now() >= cap) return;
    }
  }

  /**
   * Renews the lease of every attempt whose lease has less than two thirds left (so a handler
   * shorter than a third of the lease never costs a write). Returns how many were renewed.
   */
  async extendLeases(): Promise<number> {
    const now = this.o.clock.now().getTime();
    const due = [...this.running.values()].filter((e) => e.counted && e.leaseUntil - now < (this.o.leaseMs * 2) / 3);
    if (due.length === 0) return 0;
    const until = now + this.o.leaseMs;
    const held = await this.o.repo.extendLeases(due.map((e) => e.ref), new Date(until));
    for (const e of due) if (held.has(e.ref.id)) e.leaseUntil = until;
    return held.size;
  }

  /**
   * Graceful shutdown, after the deadline: gives every unfinished delivery back (running →
   * queued, re-enqueued now, a `released` history row), then aborts the handlers. Their late
   * completions find the row moved and change nothing.
   */
  async releaseUnfinished(): Promise<number> {
    this.stopping = true;
    await this.starter.drain(); // counts in flight land first, so each release matches its row
    const entries = [...this.running.values()];
    if (entries.length === 0) return 0;
    const now = this.o.clock.now();
    const done = await this.o.repo.release(entries.map((e) => e.ref), now, this.o.workerId, entries.map((e) => e.startedAt), entries.map((e) => e.counted));
    const attemptOf = new Map(entries.map((e) => [e.ref.id, e.ref.attempt]));
    await this.requeue(done.map((r) => ({ id: r.id, runAt: now, tenantId: r.tenantId, kind: r.kind, afterAttempt: attemptOf.get(r.id) })), now);
    const ids = new Set(done.map((r) => r.id));
    for (const e of entries) {
      if (!ids.has(e.ref.id)) continue;
      e.released = true;
      e.onReleased();
      e.abort?.(new WorkerShutdownError());
      this.o.metrics.executions.inc({ kind: e.kind, outcome: 'released' });
    }
    this.o.logger.warn({ released: done.length, unfinished: entries.length }, 'released unfinished jobs at shutdown');
    return done.length;
  }

  /** The worker is shutting down: outcome writes that fail are left to the lease rescue. */
  beginClose(): void {
    this.closing = true;
  }

  /** Waits for queued claims and group commits (shutdown, tests). */
  async drain(): Promise<void> {
    await this.claimer.drain();
    await this.starter.drain();
    await this.completer.drain();
    await Promise.all([...this.settling]);
  }

  /**
   * A delivery not started because the worker is stopping: its row is still queued, so it goes
   * back to the head of the ready list (bounded: if Redis does not answer, the overdue sweep
   * finds the row).
   */
  private async giveBack(d: Delivery): Promise<ExecutionResult> {
    await within(2000, this.o.ready.giveBack(d.pool, [{ id: d.id, dueMs: d.dueMs, slots: d.slots }]), 'give back').catch(() => undefined);
    return 'given_back';
  }

  /** Claimed but not started (the shutdown came first): back to queued at once. */
  private async releaseClaimed(row: RunnableJob): Promise<ExecutionResult> {
    const now = this.o.clock.now();
    const done = await this.o.repo.release([{ id: row.id, attempt: row.attempt }], now, this.o.workerId, [now], [row.counted]);
    await this.requeue(done.map((r) => ({ id: r.id, runAt: now, tenantId: r.tenantId, kind: r.kind, afterAttempt: row.attempt })), now);
    return 'released';
  }

  private async run(row: RunnableJob, d: Delivery, entry: Running, counted: Promise<boolean>): Promise<ExecutionResult> {
    const { clock, metrics } = this.o;
    const startedAt = clock.now();
    entry.startedAt = startedAt;
    metrics.observeLag(d.pool, row.tenantId, Math.max(0, startedAt.getTime() - d.dueMs) / 1000);
    const tx = new LazyTx(this.o.dataSource);
    const handler = this.o.registry.get(row.kind);
    const effects = effectRecordsFor(this.effects, row, handler?.timeoutMs ?? 0);
    const outcome = await runHandler(handler, row, entry, { tx, effects }, metrics, this.o.logger);
    if (entry.released) {
      await tx.rollback().catch(() => undefined);
      return 'released';
    }
    if (!(await counted)) {
      await tx.rollback().catch(() => undefined);
      return 'stale';
    }
    const record = this.record(row, outcome, startedAt);
    if (tx.opened && outcome.error === undefined) return this.completeInTx(row, record, tx, outcome, startedAt, entry.leaseUntil);
    await tx.rollback().catch((err: unknown) => outcome.logger().warn({ err }, 'rollback failed'));
    return this.completeInGroup(row, record, outcome, entry.leaseUntil);
  }

  /** The handler wrote through ctx.tx(): its writes and the guarded completion commit together. */
  private async completeInTx(
    row: RunnableJob, record: CompletionRecord, tx: LazyTx, outcome: HandlerRun, startedAt: Date, leaseUntil: number,
  ): Promise<ExecutionResult> {
    const { clock } = this.o;
    let applied: boolean;
    try {
      applied = await tx.finish(async (em) => (await this.o.repo.complete([record], clock.now(), em)).has(row.id));
      if (applied && record.next === 'queued') await this.requeue([hotItem(record, row.kind)], clock.now());
    } catch (err) {
      // The commit itself failed: nothing of the handler's survived, so this is a failed attempt.
      const failed = this.record(row, { error: err }, startedAt);
      return this.afterCommit(await this.submitCompletion({ record: failed, kind: row.kind }, leaseUntil), row, failed, err, outcome.logger);
    }
    return this.afterCommit(applied, row, record, outcome.error, outcome.logger);
  }

  /**
   * Group commit in the background: the slot is free as soon as the handler is done, so a slow
   * WAL flush does not hold back the next handler starts. If the process dies before the commit,
   * the row is still running: the lease rescue runs the job again, as after a crash mid-handler.
   */
  private async completeInGroup(row: RunnableJob, record: CompletionRecord, outcome: HandlerRun, leaseUntil: number): Promise<ExecutionResult> {
    const settle = this.submitCompletion({ record, kind: row.kind }, leaseUntil).then(
      (applied) => {
        this.afterCommit(applied, row, record, outcome.error, outcome.logger);
      },
      (err: unknown) => outcome.logger().error({ err }, 'could not record the outcome; the lease rescue will run the job again'),
    );
    this.settling.add(settle);
    void settle.finally(() => this.settling.delete(settle));
    while (this.settling.size > MAX_PENDING_COMMITS) await Promise.race(this.settling);
    return 'submitted';
  }

  /**
   * A completion whose write fails (Postgres restarting) is tried again, with backoff, while the
   * attempt's lease lasts: the chaos bench measured jobs 50-110 s late when one failed write left
   * the row to the lease rescue. The guarded UPDATE makes a write after a rescue a no-op.
   */
  private submitCompletion(item: { record: CompletionRecord; kind: string }, leaseUntil: number): Promise<boolean> {
    return this.whileLeased(() => this.completer.submit(item), leaseUntil, {
      firstPauseMs: 500, maxPauseMs: 5000, what: 'record the outcome', jobId: item.record.id,
    });
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
      // The whole exception (stack included) goes to the log: its tenant is shown only a code and
      // a message meant for it (publicAttemptError), never its text.
      logger().warn({ outcome: record.outcome, next: record.next, err: error instanceof Error ? error : undefined, reason: record.error }, 'attempt did not complete');
    }
    return 'applied';
  }

  private record(row: RunnableJob, run: Pick<HandlerRun, 'outcome' | 'error'>, startedAt: Date): CompletionRecord {
    return attemptRecord(row, run.outcome, run.error, {
      startedAt, now: this.o.clock.now(), workerId: this.o.workerId, horizons: this.o.horizons, retryPolicy: this.o.retryPolicy,
    });
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
