import { discardConnection } from '@almanac/persistence';
import { tracer } from '@almanac/platform';
import { type Context, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

export class TransactionClosedError extends Error {
  override readonly name = 'TransactionClosedError';
  constructor() {
    super('the job transaction is already finished: use ctx.tx() only while the handler runs');
  }
}

/**
 * The handler's transaction, opened on first use so handlers that write nothing cost no
 * connection and no BEGIN/COMMIT (their completions are group-committed instead).
 */
export class LazyTx {
  private runner: QueryRunner | undefined;
  private opening: Promise<EntityManager> | undefined;
  private closed = false;
  /** Its run was aborted (ctx.signal), while the handler may still be running. */
  abandoned = false;
  /** The transaction's span (`ctx.tx()`), a child of the handler's, only while tracing records it. */
  private span: Span | undefined;

  constructor(private readonly dataSource: DataSource) {}

  get opened(): boolean { return this.opening !== undefined; }

  /** Opens the transaction on first use; its span is a child of `parent`'s span when that one records. */
  open(parent: Context = ROOT_CONTEXT): Promise<EntityManager> {
    if (this.closed) return Promise.reject(new TransactionClosedError());
    if (!this.opening && trace.getSpan(parent)?.isRecording()) this.span = tracer.startSpan('tx', {}, parent);
    this.opening ??= this.begin();
    return this.opening;
  }

  /** Runs `decide` in the transaction: commits when it answers true, rolls back otherwise. */
  async finish(decide: (tx: EntityManager) => Promise<boolean>): Promise<boolean> {
    this.closed = true;
    if (!this.opening) throw new Error('LazyTx.finish without an open transaction');
    const tx = await this.opening;
    const runner = this.runner as QueryRunner;
    try {
      const ok = await decide(tx);
      await (ok ? runner.commitTransaction() : runner.rollbackTransaction());
      this.endSpan(ok ? 'commit' : 'rollback');
      return ok;
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      this.endSpan('rollback');
      throw err;
    } finally {
      await runner.release();
    }
  }

  /**
   * Discards whatever the handler wrote (it threw, timed out, or the delivery was released). An
   * abandoned handler may still be sending queries: after a ROLLBACK they would run on their own
   * and commit, so its connection is closed instead (Postgres rolls back; every later query fails).
   */
  async rollback(): Promise<void> {
    this.closed = true;
    if (!this.opening) return;
    if (!(await this.opening.then(() => true, () => false))) return this.endSpan('rollback'); // never opened: begin released the runner
    const runner = this.runner as QueryRunner;
    try {
      if (!this.abandoned && runner.isTransactionActive) await runner.rollbackTransaction();
    } finally {
      this.endSpan('rollback');
      // Discarded: a query of it may still be running or waiting on a lock, and its backend ends it within a second.
      await (this.abandoned ? discardConnection(runner, new Error('abandoned run')) : runner.release());
    }
  }

  private endSpan(end: 'commit' | 'rollback'): void {
    this.span?.setAttribute('almanac.tx.end', end).end();
    this.span = undefined;
  }

  private async begin(): Promise<EntityManager> {
    const runner = this.dataSource.createQueryRunner();
    this.runner = runner;
    try {
      await runner.connect();
      await runner.startTransaction();
    } catch (err) {
      await runner.release().catch(() => undefined);
      throw err;
    }
    return runner.manager;
  }
}
