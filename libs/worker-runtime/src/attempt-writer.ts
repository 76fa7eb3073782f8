import type { Hint } from '@almanac/domain';
import type { CompletionRecord, RunnableJob } from '@almanac/persistence';
import { COMPLETION_LINGER_MS, isValueError, MicroBatcher, OUTCOME_RETRY_PAUSES, retryWithBackoff, runIsolated, sqlStateOf } from '@almanac/platform';
import type { Logger } from 'pino';
import { attemptRecord } from './attempt-record';
import type { ExecutorOptions } from './executor';
import type { HandlerRun } from './handler-run';
import type { LazyTx } from './lazy-tx';

/** applied: recorded; stale: the row had moved on (rescued, released, run by another hint); submitted: in a group commit. */
export type WriteResult = 'applied' | 'stale' | 'submitted';

/** Group commits waiting beyond this make new runs wait (backpressure on a slow database). */
const MAX_PENDING_COMMITS = 5000;

/** What the writer shares with its executor, and its own. */
export type AttemptWriterOptions = Pick<ExecutorOptions, 'repo' | 'hotQueue' | 'clock' | 'logger' | 'metrics' | 'horizons' | 'retryPolicy'> & {
  /** Written into each history row (ALMANAC_WORKER_ID). */
  workerName: string;
  maxBatch: number;
};

/**
 * Records how attempts ended with a guarded update: in the handler's own transaction when it
 * opened one (its writes and the completion commit together, or neither), otherwise in a group
 * commit shared with other jobs. A retry due soon goes back on the hot queue. A write that fails
 * is sent again while the attempt's lease lasts; after that the rescue has the row.
 */
export class AttemptWriter {
  /** Answers each outcome: applied, stale, or the error to send it again with (the batch failed before it was written). */
  private readonly completer: MicroBatcher<{ record: CompletionRecord; kind: string }, boolean | Error>;
  private readonly settling = new Set<Promise<void>>();
  /** Set at a shutdown to its handlers' deadline (clock ms): no failed write is retried beyond the grace period. */
  retryUntilMs = Infinity;

  constructor(private readonly o: AttemptWriterOptions) {
    this.completer = new MicroBatcher((items) => this.completeBatch(items), { maxBatch: o.maxBatch, maxInFlight: 2, lingerMs: COMPLETION_LINGER_MS });
  }

  /** The handler's outcome, as its row and history record it. */
  write(row: RunnableJob, run: HandlerRun, tx: LazyTx, startedAt: Date, leaseUntilMs: number): Promise<WriteResult> {
    const record = this.record(row, run, startedAt);
    if (tx.opened && run.error === undefined) return this.completeInTx(row, record, tx, run, startedAt, leaseUntilMs);
    if (!tx.opened) return (void tx.rollback(), this.completeInGroup(row, record, run, leaseUntilMs)); // closes it; nothing to wait for
    return tx.rollback().catch((err: unknown) => run.logger().warn({ err }, 'rollback failed')).then(() => this.completeInGroup(row, record, run, leaseUntilMs));
  }

  async drain(): Promise<void> {
    await this.completer.drain();
    await Promise.all([...this.settling]);
  }

  /** Hints of rows due again soon (a retry, a release) back on the hot queue, stamped with the database time their delays count from (by BullMQ's own, a host X ahead fired them X late); if Redis refuses, the overdue sweep has them. */
  async requeue(hints: Hint[]): Promise<void> {
    const now = this.o.clock.now();
    if (hints.length > 0) await this.o.hotQueue.enqueue(hints, now, { addedAtMs: now.getTime() }).catch((err: unknown) => this.o.logger.error({ err, jobs: hints.length }, 'could not re-enqueue; the overdue sweep will'));
  }

  /** Sends a write again after a failure while the lease lasts, and at a shutdown until its handlers' deadline (retries could outlast the grace period). */
  private whileLeased<T>(write: () => Promise<T>, deadlineMs: number, jobId: string, failed?: unknown): Promise<T> {
    return retryWithBackoff(write, {
      ...OUTCOME_RETRY_PAUSES, failed, until: () => Math.min(deadlineMs, this.retryUntilMs), now: () => this.o.clock.now().getTime(),
      onRetry: (err, pause) => this.o.logger.warn({ err, jobId }, `could not record the outcome; trying again in ${pause} ms`),
    });
  }

  private async completeInTx(row: RunnableJob, record: CompletionRecord, tx: LazyTx, run: HandlerRun, startedAt: Date, leaseUntilMs: number): Promise<WriteResult> {
    let applied: boolean;
    try {
      applied = await tx.finish(async (em) => {
        const complete = async (r: CompletionRecord) => (await this.o.repo.complete([r], this.o.clock.now(), em)).has(row.id);
        // A value Postgres would refuse is refused before the statement (storedJson): the transaction is whole for the record without it.
        return complete(record).catch(async (err: unknown) => (isValueError(err) ? complete(this.setAside(record, err)) : Promise.reject(err as Error)));
      });
      if (applied && record.next === 'queued') await this.requeue([hintOf(record, row.kind)]);
    } catch (err) {
      // The commit itself failed: nothing of the handler's survived, so this is a failed attempt.
      const failed = this.record(row, { error: err }, startedAt);
      const written = await this.whileLeased(() => this.commit({ record: failed, kind: row.kind }), leaseUntilMs, row.id);
      return this.afterCommit(written, row, failed, err, run.logger);
    }
    return this.afterCommit(applied, row, record, run.error, run.logger);
  }

  /**
   * Group commit in the background: the slot is free as soon as the handler is done, so a slow
   * WAL flush does not hold back the next handler starts. If the process dies before the commit,
   * the row is still running: the rescue runs the job again, as after a crash mid-handler.
   */
  private async completeInGroup(row: RunnableJob, record: CompletionRecord, run: HandlerRun, leaseUntilMs: number): Promise<WriteResult> {
    const item = { record, kind: row.kind };
    // Tried once straight through the group commit; only an outcome whose batch failed pays for the retry loop (its promises and closures were ~2 KB of the worker's garbage per job).
    const settle: Promise<void> = this.commit(item).catch((failed: unknown) => this.whileLeased(() => this.commit(item), leaseUntilMs, row.id, failed)).then(
      (applied) => void (this.settling.delete(settle), this.afterCommit(applied, row, record, run.error, run.logger)),
      (err: unknown) => void (this.settling.delete(settle), run.logger().error({ err }, 'could not record the outcome; the rescue will run the job again')),
    );
    this.settling.add(settle);
    while (this.settling.size > MAX_PENDING_COMMITS) await Promise.race(this.settling);
    return 'submitted';
  }

  private afterCommit(applied: boolean, row: RunnableJob, record: CompletionRecord, error: unknown, logger: () => Logger): WriteResult {
    const { metrics } = this.o;
    if (!applied) {
      metrics.dropped.inc({ reason: 'stale_completion' });
      logger().info('completion not recorded: the job moved on (rescued, released or done by another hint)');
      return 'stale';
    }
    metrics.executions.inc({ kind: row.kind, outcome: record.outcome });
    if (record.next === 'dead') metrics.deadJobs.inc();
    if (record.outcome !== 'succeeded') {
      // The whole exception (stack included) goes to the log: its tenant is shown only a code and
      // a message meant for it (publicAttemptError), never its text.
      logger()[record.outcome === 'snoozed' ? 'info' : 'warn']({ outcome: record.outcome, next: record.next, err: error instanceof Error ? error : undefined, reason: record.error }, 'attempt did not complete');
    }
    return 'applied';
  }

  private record(row: RunnableJob, run: Pick<HandlerRun, 'outcome' | 'error'>, startedAt: Date): CompletionRecord {
    return attemptRecord(row, run.outcome, run.error, {
      startedAt, now: this.o.clock.now(), workerId: this.o.workerName, horizons: this.o.horizons, retryPolicy: this.o.retryPolicy,
    });
  }

  /** A record Postgres refused a value of (its result or error text), counted and logged, as it is written instead: without them, with a note. */
  private setAside(r: CompletionRecord, err: unknown): CompletionRecord {
    this.o.metrics.setAside.inc({ statement: 'completion' });
    this.o.logger.error({ err, jobId: r.id, tenantId: r.tenantId }, 'outcome refused by Postgres; written without its result and error text');
    return { ...r, result: undefined, error: `the outcome's result or error could not be stored (SQLSTATE ${sqlStateOf(err)}); see the worker's log` };
  }

  /** One outcome through the group commit: applied or stale; throws for a write to send again. */
  private commit(item: { record: CompletionRecord; kind: string }): Promise<boolean> {
    return this.completer.submit(item).then((answer) => (answer instanceof Error ? Promise.reject(answer) : answer));
  }

  /**
   * One guarded UPDATE + one history INSERT for the whole batch, then one addBulk for retries due
   * soon. A record Postgres refuses on a value (a NUL in the error text or the result) would fail
   * the batch for every tenant in it, again on every retry: it is found (runIsolated) and written
   * without its result and with an error of ours, so its job still ends as its handler decided.
   */
  private async completeBatch(items: { record: CompletionRecord; kind: string }[]): Promise<(boolean | Error)[]> {
    // Two outcomes of one job in one batch: the latest attempt speaks (the only one its guard may let through), the other is stale.
    const latest = new Map<string, { record: CompletionRecord; kind: string }>();
    for (const i of items) if (i.record.attempt > (latest.get(i.record.id)?.record.attempt ?? -1)) latest.set(i.record.id, i);
    const now = this.o.clock.now();
    const applied = new Set<string>();
    const write = async (records: CompletionRecord[]) => void (await this.o.repo.complete(records, now)).forEach((id) => applied.add(id));
    let failed: Error | undefined;
    await runIsolated([...latest.values()].map((i) => i.record), {
      run: write,
      isValueError,
      groupOf: (r) => r.tenantId,
      setAside: async (r, err) => {
        const bare = this.setAside(r, err);
        // Refused again (a value this write still carries): the row stays running, and the rescue
        // runs the job again after its lease; the batch's other outcomes are written regardless.
        await write([bare]).catch((again: unknown) => {
          if (!isValueError(again)) throw again;
          this.o.logger.error({ err: again, jobId: r.id }, 'outcome refused again without its values; the rescue will run the job again');
        });
      },
    }).catch((err: unknown) => {
      // Postgres went away part way (a split batch is several statements): what was written
      // stays written and counted; only the rest is sent again.
      failed = err instanceof Error ? err : new Error(String(err));
    });
    const again = [...latest.values()].filter((i) => i.record.next === 'queued' && applied.has(i.record.id));
    await this.requeue(again.map((i) => hintOf(i.record, i.kind)));
    return items.map((i) => latest.get(i.record.id) === i && (applied.has(i.record.id) || (failed ?? false)));
  }
}

function hintOf(r: CompletionRecord, kind: string): Hint {
  return { id: r.id, tenantId: r.tenantId, kind, dueMs: (r.runAt ?? new Date()).getTime() };
}
