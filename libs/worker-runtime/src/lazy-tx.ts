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

  /** Runs `decide` in the transaction: commits when it answers true, else discards it as rollback does. */
  async finish(decide: (tx: EntityManager) => Promise<boolean>): Promise<boolean> {
    this.closed = true;
    if (!this.opening) throw new Error('LazyTx.finish without an open transaction');
    const tx = await this.opening;
    const runner = this.runner as QueryRunner;
    let committed = false;
    try {
      if (await decide(tx)) {
        await runner.commitTransaction();
        committed = true;
      }
      return committed;
    } finally {
      this.endSpan(committed ? 'commit' : 'rollback');
      await (committed ? runner.release() : discardConnection(runner, new Error('not committed')));
    }
  }

  /**
   * Discards what the handler wrote by closing its connection, not with a ROLLBACK: the handler
   * may still be sending queries (a Promise.all branch, a run timed out), which after a ROLLBACK
   * would run on their own and commit. Postgres rolls back; a query still running ends within 1 s.
   */
  async rollback(): Promise<void> {
    if (this.closed) return; // rolled back or finished already
    this.closed = true;
    if (!this.opening) return;
    if (!(await this.opening.then(() => true, () => false))) return this.endSpan('rollback'); // never opened: begin released the runner
    this.endSpan('rollback');
    await discardConnection(this.runner as QueryRunner, new Error('rolled back'));
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
